import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { json, makeApp, type TestApp } from './helpers/app.ts';
import { API_KEY, AUTH_ENV } from './helpers/security.ts';

type Inject = InjectOptions;

async function withApp(env: Record<string, string>, fn: (t: TestApp) => Promise<void>): Promise<void> {
  const t = await makeApp(env);
  try {
    await fn(t);
  } finally {
    await t.close();
  }
}

async function statuses(t: TestApp, n: number, req: () => Inject): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await t.app.inject(req())).statusCode);
  return out;
}

function assert429(res: LightMyRequestResponse, limit: number): void {
  assert.equal(res.statusCode, 429, res.body);
  const b = res.json();
  assert.equal(b.error.code, 'RATE_LIMIT_EXCEEDED');
  assert.equal(b.meta.request_id, res.headers['x-request-id']);
  assert.equal(res.headers['ratelimit-limit'], String(limit));
  assert.equal(res.headers['ratelimit-remaining'], '0');
  const after = Number(res.headers['retry-after']);
  assert.ok(after > 0 && after <= 60, `Retry-After ${after}`);
  assert.equal(res.headers['ratelimit-reset'], String(after));
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.equal(res.headers['x-frame-options'], 'DENY');
}

const ip = (remoteAddress: string, extra: Partial<Inject> = {}): Inject => ({
  url: '/api/v1/stats',
  remoteAddress,
  ...extra,
});

describe('rate limits: per client', () => {
  it('the default limit applies per IP; the 429 is a full envelope with every header', () =>
    withApp({ ROTA_RATE_LIMIT: '3/minute', ROTA_CORS_ORIGINS: 'https://ui.example' }, async (t) => {
      const headers = { origin: 'https://ui.example' };
      assert.deepEqual(await statuses(t, 3, () => ip('203.0.113.1', { headers })), [200, 200, 200]);
      const res = await t.app.inject(ip('203.0.113.1', { headers }));
      assert429(res, 3);
      assert.equal(res.headers['access-control-allow-origin'], 'https://ui.example');
      assert.equal((await t.app.inject(ip('203.0.113.2'))).statusCode, 200, 'another client is not affected');
    }));

  it('404s count too, so probing paths is limited; /metrics is never limited and uses no quota', () =>
    withApp({ ROTA_RATE_LIMIT: '3/minute' }, async (t) => {
      for (let i = 0; i < 20; i++) assert.equal((await t.app.inject({ url: '/metrics' })).statusCode, 200);
      const probe = await statuses(t, 5, () => ({ url: `/wp-admin/${randomUUID()}` }));
      assert.deepEqual(probe, [404, 404, 404, 429, 429]);
      assert.equal((await t.app.inject({ url: '/metrics' })).statusCode, 200);
    }));

  it('an IPv6 client is counted per /64: rotating addresses inside it does not escape', () =>
    withApp({ ROTA_RATE_LIMIT: '3/minute' }, async (t) => {
      const got = await statuses(t, 5, () => ip(`2001:db8:5:6:${randomBytes(2).toString('hex')}::1`));
      assert.deepEqual(got, [200, 200, 200, 429, 429]);
    }));
});

describe('rate limits: API keys (auth on)', () => {
  const env = { ...AUTH_ENV, ROTA_RATE_LIMIT: '4/minute', ROTA_API_KEY_RATE_LIMIT: '6/minute' };

  it('rotating random X-API-Key values does not escape the IP limit; the valid key keeps its own bucket', () =>
    withApp(env, async (t) => {
      const got = await statuses(t, 8, () =>
        ip('198.51.100.9', { headers: { 'x-api-key': randomBytes(12).toString('hex') } }),
      );
      assert.deepEqual(got, [401, 401, 401, 401, 429, 429, 429, 429]);
      const audits = t.logs.filter((l) => l.includes('"action":"auth.failed"'));
      assert.equal(audits.length, 4, 'only refused-by-auth requests are audited as failed auth');
      // The key has its own, larger bucket: the exhausted IP is no obstacle, and nothing else changed.
      const keyed = await statuses(t, 7, () => ip('198.51.100.9', { headers: { 'x-api-key': API_KEY } }));
      assert.deepEqual(keyed, [200, 200, 200, 200, 200, 200, 429]);
      assert.equal(t.services.pool.size, 0);
    }));

  it('/metrics is unlimited for the key, but guessing keys against it is counted like anywhere else', () =>
    withApp(env, async (t) => {
      const scrape = (key: string) => ip('198.51.100.10', { url: '/metrics', headers: { 'x-api-key': key } });
      assert.deepEqual(await statuses(t, 12, () => scrape(API_KEY)), Array(12).fill(200));
      const guesses = await statuses(t, 6, () => scrape(randomBytes(8).toString('hex')));
      assert.deepEqual(guesses, [401, 401, 401, 401, 429, 429]);
      assert.equal((await t.app.inject(scrape(API_KEY))).statusCode, 200, 'the scraper is never refused');
    }));

  it('the key is one bucket whichever header carries it and whichever address sends it', () =>
    withApp(env, async (t) => {
      const forms = [{ 'x-api-key': API_KEY }, { authorization: `Bearer ${API_KEY}` }];
      const got: number[] = [];
      for (let i = 0; i < 7; i++) {
        const res = await t.app.inject(ip(`203.0.113.${i + 1}`, { headers: forms[i % 2]! }));
        got.push(res.statusCode);
        if (i === 0) assert.equal(res.headers['ratelimit-limit'], '6');
      }
      assert.deepEqual(got, [200, 200, 200, 200, 200, 200, 429]);
    }));
});

describe('rate limits: per route (docs/decisions.md, "Auth and rate limits")', () => {
  it('POST proxies has its own limit; refused adds change nothing', () =>
    withApp({ ROTA_RATE_LIMIT_ADD_PROXY: '2/minute' }, async (t) => {
      let n = 0;
      const add = () => ({
        method: 'POST' as const,
        url: '/api/v1/proxies',
        ...json({ url: `http://1.2.3.${++n}:80` }),
      });
      assert.deepEqual(await statuses(t, 4, add), [201, 201, 429, 429]);
      assert.equal(t.services.pool.size, 2);
      assert.equal(
        (await t.app.inject({ url: '/api/v1/proxies' })).statusCode,
        200,
        'other routes unaffected',
      );
    }));

  it('health-check and its deprecated alias share one limit; more than 1000 ids is a 422', () =>
    withApp({ ROTA_RATE_LIMIT_HEALTH_CHECK: '3/minute' }, async (t) => {
      const ids = Array.from({ length: 1001 }, () => randomUUID());
      const big = await t.app.inject({
        method: 'POST',
        url: '/api/v1/proxies/health-check',
        ...json({ proxy_ids: ids }),
      });
      assert.equal(big.statusCode, 422);
      const paths = ['/api/v1/proxies/test', '/api/v1/proxies/health-check'];
      let i = 0;
      const got = await statuses(t, 4, () => ({ method: 'POST', url: paths[i++ % 2]!, ...json({}) }));
      assert.deepEqual(got, [200, 200, 429, 429]);
    }));

  it('PUT config and breaker reset have their own limits', () =>
    withApp({ ROTA_RATE_LIMIT_CONFIG: '2/minute', ROTA_RATE_LIMIT_RESET: '1/minute' }, async (t) => {
      const put = () => ({ method: 'PUT' as const, url: '/api/v1/config', ...json({ timeout: 20 }) });
      assert.deepEqual(await statuses(t, 3, put), [200, 200, 429]);
      const reset = () => ({
        method: 'POST' as const,
        url: `/api/v1/circuit-breakers/${randomUUID()}/reset`,
      });
      assert.deepEqual(await statuses(t, 2, reset), [404, 429]);
    }));

  it('PUT config rate_limits apply at once, to the default and to POST request', () =>
    withApp({ ROTA_RATE_LIMIT: '100/minute', ROTA_RATE_LIMIT_REQUEST: '100/minute' }, async (t) => {
      const stats = () => ({ url: '/api/v1/stats' });
      assert.deepEqual(await statuses(t, 2, stats), [200, 200]);
      const limits = { default_limit: 4, request_endpoint_limit: 1 };
      const put = await t.app.inject({
        method: 'PUT',
        url: '/api/v1/config',
        ...json({ rate_limits: limits }),
      });
      assert.equal(put.statusCode, 200, put.body);
      assert.deepEqual(await statuses(t, 3, stats), [200, 200, 429], 'the new default counts what was used');
      const req = () => ({ method: 'POST' as const, url: '/api/v1/request', ...json({ url: 'ftp://x' }) });
      assert.deepEqual(await statuses(t, 2, req), [400, 429]);
      const back = await t.app.inject({
        method: 'PUT',
        url: '/api/v1/config',
        ...json({ rate_limits: { default_limit: 1000 } }),
      });
      assert.equal(back.statusCode, 200);
      assert.equal((await t.app.inject(stats())).statusCode, 200, 'raising it applies at once too');
    }));
});

describe('rate limits: client IP behind proxies', () => {
  const env = { ROTA_RATE_LIMIT: '3/minute', ROTA_TRUSTED_PROXIES: '10.0.0.0/8' };

  it('X-Forwarded-For from an untrusted peer is ignored: forging it never changes the bucket', () =>
    withApp(env, async (t) => {
      const got = await statuses(t, 6, () =>
        ip('203.0.113.50', {
          headers: { 'x-forwarded-for': `${randomBytes(1)[0]}.1.2.3, 192.0.2.${randomBytes(1)[0]}` },
        }),
      );
      assert.deepEqual(got, [200, 200, 200, 429, 429, 429]);
      const logged = t.logs.filter((l) => l.includes('"msg":"request"')).map((l) => JSON.parse(l).client_ip);
      assert.ok(
        logged.every((c) => c === '203.0.113.50'),
        `logged ${[...new Set(logged)].join(' ')}`,
      );
    }));

  it("a trusted proxy's chain picks the rightmost untrusted address; forged left entries do not matter", () =>
    withApp(env, async (t) => {
      const via = (xff: string) => ip('10.1.2.3', { headers: { 'x-forwarded-for': xff } });
      const forged = () => `${randomBytes(4).join('.')}, ${randomUUID()}`;
      const got = await statuses(t, 5, () => via(`${forged()}, 198.51.100.7, 10.9.9.9`));
      assert.deepEqual(got, [200, 200, 200, 429, 429]);
      assert.equal((await t.app.inject(via('198.51.100.8, 10.9.9.9'))).statusCode, 200, 'a different client');
      assert.equal((await t.app.inject(via(`${forged()}, 198.51.100.7`))).statusCode, 429);
      const line = JSON.parse(t.logs.filter((l) => l.includes('"msg":"request"')).at(-1)!);
      assert.equal(line.client_ip, '198.51.100.7');
    }));
});
