/**
 * Cross-site control of the API through the real app (inject): a Host not allowed gets 421, a write from
 * another web origin gets 403 before its body is read, its rate-limit quota is spent or anything changes;
 * the API's own origin, ROTA_CORS_ORIGINS (also as `PUT config` changes it) and clients that send no
 * Origin (curl, scripts) keep working. The document lists both answers.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { json, makeApp, type TestApp } from './helpers/app.ts';

const FOREIGN = 'http://127.0.0.2:9999';

async function withApp(env: Record<string, string>, fn: (t: TestApp) => Promise<void>): Promise<void> {
  const t = await makeApp(env);
  try {
    await fn(t);
  } finally {
    await t.close();
  }
}

function importList(t: TestApp, headers: Record<string, string> = {}, body = '1.2.3.4:8080') {
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/proxies/import',
    headers: { 'content-type': 'text/plain', ...headers },
    payload: body,
  });
}

async function poolUrls(t: TestApp): Promise<string[]> {
  const res = await t.app.inject({ url: '/api/v1/proxies?page_size=100' });
  return (res.json().data.items as { url: string }[]).map((p) => p.url);
}

function assertRefused(res: LightMyRequestResponse, status: number, code: string): void {
  assert.equal(res.statusCode, status, res.body);
  const body = res.json();
  assert.equal(body.status, 'error');
  assert.equal(body.error.code, code);
  assert.equal(body.meta.request_id, res.headers['x-request-id']);
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.equal(res.headers['access-control-allow-origin'], undefined);
}

describe('Host allow-list (DNS rebinding)', () => {
  it('answers 421 to a Host not allowed, on every route, and serves the loopback names', () =>
    withApp({}, async (t) => {
      for (const url of ['/api/v1/proxies', '/api/v1/health', '/dashboard', '/openapi.json', '/nope']) {
        const res = await t.app.inject({ url, headers: { host: 'attacker.example:8000' } });
        assertRefused(res, 421, 'MISDIRECTED_REQUEST');
      }
      const write = await importList(t, {
        host: 'attacker.example:8000',
        origin: 'http://attacker.example:8000',
      });
      assertRefused(write, 421, 'MISDIRECTED_REQUEST');
      assert.deepEqual(await poolUrls(t), [], 'the rebound page imported nothing');
      for (const host of ['localhost:80', '127.0.0.1:8000', '[::1]:8000', 'LOCALHOST.', undefined]) {
        const res = await t.app.inject({ url: '/api/v1/stats', headers: host ? { host } : {} });
        assert.equal(res.statusCode, 200, String(host));
      }
    }));

  it('allows any host when ROTA_HOST is not loopback; ROTA_ALLOWED_HOSTS names them otherwise', async () => {
    await withApp({ ROTA_HOST: '0.0.0.0' }, async (t) => {
      const res = await t.app.inject({ url: '/api/v1/stats', headers: { host: 'rota.lan:8000' } });
      assert.equal(res.statusCode, 200);
    });
    await withApp({ ROTA_HOST: '0.0.0.0', ROTA_ALLOWED_HOSTS: 'rota.example:8443' }, async (t) => {
      const host = async (h: string) =>
        (await t.app.inject({ url: '/api/v1/stats', headers: { host: h } })).statusCode;
      assert.equal(await host('Rota.Example:8443'), 200);
      assert.equal(await host('rota.example:8000'), 421);
      assert.equal(await host('localhost'), 421);
    });
  });
});

describe('writes from another web origin', () => {
  it('are refused with 403 and import nothing; Origin: null too', () =>
    withApp({}, async (t) => {
      assertRefused(await importList(t, { origin: FOREIGN }), 403, 'FORBIDDEN_ORIGIN');
      assertRefused(await importList(t, { origin: 'null' }), 403, 'FORBIDDEN_ORIGIN');
      assertRefused(await importList(t, { 'sec-fetch-site': 'cross-site' }), 403, 'FORBIDDEN_ORIGIN');
      assertRefused(await importList(t, { origin: 'http://localhost:81' }), 403, 'FORBIDDEN_ORIGIN');
      assert.deepEqual(await poolUrls(t), []);
    }));

  it('do not reset a breaker', () =>
    withApp({ ROTA_BREAKER_FAILURE_THRESHOLD: '1' }, async (t) => {
      const added = await t.app.inject({
        method: 'POST',
        url: '/api/v1/proxies',
        ...json({ url: 'http://10.9.9.9:3128' }),
      });
      const id = added.json().data.id as string;
      t.services.breakers.admit(id)?.release('failure');
      assert.equal(t.services.breakers.state(id), 'open');
      const reset = (headers: Record<string, string>) =>
        t.app.inject({ method: 'POST', url: `/api/v1/circuit-breakers/${id}/reset`, headers });
      assertRefused(await reset({ origin: FOREIGN, 'content-type': 'text/plain' }), 403, 'FORBIDDEN_ORIGIN');
      assert.equal(t.services.breakers.state(id), 'open');
      assert.equal((await reset({ origin: 'http://localhost' })).statusCode, 200, 'its own origin may');
      assert.equal(t.services.breakers.state(id), 'closed');
    }));

  it('are refused before the body is read and before the rate limiter counts them', () =>
    withApp({ ROTA_RATE_LIMIT: '2/minute', ROTA_RATE_LIMIT_ADD_PROXY: '2/minute' }, async (t) => {
      for (let i = 0; i < 5; i++) {
        const res = await t.app.inject({
          method: 'POST',
          url: '/api/v1/proxies',
          headers: { origin: FOREIGN, 'content-type': 'application/json' },
          payload: '{not json',
        });
        assertRefused(res, 403, 'FORBIDDEN_ORIGIN');
      }
      assert.equal((await t.app.inject({ url: '/api/v1/stats' })).statusCode, 200, 'no quota was spent');
    }));

  it('pass from the own origin, a CORS origin (also one PUT config adds) and without Origin', () =>
    withApp({ ROTA_CORS_ORIGINS: 'https://ui.example' }, async (t) => {
      assert.equal((await importList(t, { origin: 'http://localhost' }, '1.1.1.1:1')).statusCode, 200);
      assert.equal(
        (await importList(t, { host: '127.0.0.1:8000', origin: 'http://127.0.0.1:8000' }, '1.1.1.2:1'))
          .statusCode,
        200,
      );
      assert.equal(
        (await importList(t, { host: '[::1]:8000', origin: 'http://[::1]:8000' }, '1.1.1.3:1')).statusCode,
        200,
      );
      const cors = await importList(t, { origin: 'https://ui.example' }, '1.1.1.4:1');
      assert.equal(cors.statusCode, 200);
      assert.equal(cors.headers['access-control-allow-origin'], 'https://ui.example');
      assert.equal((await importList(t, {}, '1.1.1.5:1')).statusCode, 200, 'curl sends no Origin');
      assert.equal((await importList(t, { 'sec-fetch-site': 'same-origin' }, '1.1.1.6:1')).statusCode, 200);
      assert.equal((await importList(t, { origin: 'https://new.example' }, '1.1.1.7:1')).statusCode, 403);
      const put = await t.app.inject({
        method: 'PUT',
        url: '/api/v1/config',
        ...json({ cors_origins: ['https://ui.example', 'https://new.example'] }),
      });
      assert.equal(put.statusCode, 200, put.body);
      assert.equal((await importList(t, { origin: 'https://new.example' }, '1.1.1.7:1')).statusCode, 200);
      assert.equal((await poolUrls(t)).length, 7);
    }));

  it('leave reads alone: a cross-site GET is answered', () =>
    withApp({}, async (t) => {
      const res = await t.app.inject({
        url: '/api/v1/stats',
        headers: { origin: FOREIGN, 'sec-fetch-site': 'cross-site' },
      });
      assert.equal(res.statusCode, 200);
    }));
});

describe('the OpenAPI document', () => {
  it('lists 421 on every operation and 403 on every write', () =>
    withApp({}, async (t) => {
      const doc = (await t.app.inject({ url: '/openapi.json' })).json();
      let writes = 0;
      for (const [path, item] of Object.entries(
        doc.paths as Record<string, Record<string, { responses: Record<string, { description: string }> }>>,
      )) {
        for (const [method, op] of Object.entries(item)) {
          assert.match(op.responses['421']?.description ?? '', /MISDIRECTED_REQUEST/, `${method} ${path}`);
          const write = !['get', 'head', 'options'].includes(method);
          if (write) writes++;
          assert.equal(
            /FORBIDDEN_ORIGIN/.test(op.responses['403']?.description ?? ''),
            write,
            `${method} ${path}`,
          );
        }
      }
      assert.ok(writes > 5);
    }));
});
