import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { type RawFixture, startResetter } from './fixtures/misbehaving.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { Api, injectTransport } from './helpers/api-contract.ts';
import { makeApp, type TestApp } from './helpers/app.ts';

/** PUT config: every field takes effect on the next request. */

interface ConfigView {
  rotation_strategy: string;
  timeout: number;
  max_retries: number;
  rate_limits: { default_limit: number; request_endpoint_limit: number };
  auth_enabled: boolean;
  cors_origins: string[];
}
interface Picked {
  id: string;
}
interface Proxied {
  proxy_id: string;
  attempts: number;
}

const LOOPBACK = { ROTA_SSRF_ALLOW: '127.0.0.0/8' };
let target: TargetServer;
let de: ForwardProxy;
let us: ForwardProxy;
let resetter: RawFixture;

before(async () => {
  [target, de, us, resetter] = await Promise.all([
    startTarget(),
    startForwardProxy(),
    startForwardProxy(),
    startResetter(),
  ]);
});
after(async () => {
  await Promise.all([target.close(), de.close(), us.close(), resetter.close()]);
});

async function addProxy(api: Api, port: number, extra: Record<string, unknown> = {}): Promise<string> {
  return (await api.data<Picked>('POST', '/proxies', { body: { url: `http://127.0.0.1:${port}`, ...extra } }))
    .id;
}

const requestBody = (path: string, extra: Record<string, unknown> = {}) => ({
  body: { url: `${target.origin}${path}`, ...extra },
});

describe('rotation_strategy: all seven are accepted and the next selection uses the new one', () => {
  let t: TestApp;
  let api: Api;
  let a: string;
  let b: string;
  before(async () => {
    // A fixed random source makes `random` and `weighted` deterministic: 0.3 is index 0 of two for
    // `random`, and inside B's share for `weighted` (weights 1 and 98: 0.3 × 99 = 29.7 > 1).
    t = await makeApp(LOOPBACK, { random: () => 0.3 });
    api = await Api.over(injectTransport(t.app));
    a = await addProxy(api, de.port, { country: 'DE', weight: 1 });
    b = await addProxy(api, us.port, { country: 'US', weight: 98 });
  });
  after(() => t.close());

  async function rotations(n: number, query: Record<string, string> = {}): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push((await api.data<Picked>('GET', '/rotate', { query })).id);
    return out;
  }

  async function use(strategy: string): Promise<void> {
    const view = await api.data<ConfigView>('PUT', '/config', { body: { rotation_strategy: strategy } });
    assert.equal(view.rotation_strategy, strategy);
    assert.equal((await api.data<ConfigView>('GET', '/config')).rotation_strategy, strategy);
    const status = await api.call('GET', '/status');
    assert.equal((status.json as { rotation_strategy: string }).rotation_strategy, strategy);
  }

  it('round-robin alternates', async () => {
    await use('round-robin');
    const seen = await rotations(4);
    assert.deepEqual(seen.slice(2), seen.slice(0, 2));
    assert.deepEqual(new Set(seen), new Set([a, b]));
  });

  it('random draws from the random source (index 0 at 0.3)', async () => {
    await use('random');
    assert.deepEqual(await rotations(4), [a, a, a, a]);
  });

  it('weighted follows the weights (B holds 98 of 99)', async () => {
    await use('weighted');
    assert.deepEqual(await rotations(4), [b, b, b, b]);
  });

  it('least-used keeps the least loaded; rotate is not a use', async () => {
    await use('least-used');
    const seen = await rotations(4);
    assert.equal(new Set(seen).size, 1, String(seen));
  });

  it('session-persistence pins a session to one proxy', async () => {
    await use('session-persistence');
    for (const sid of ['s-1', 's-2', 's-3']) {
      const seen = await rotations(3, { session_id: sid });
      assert.equal(new Set(seen).size, 1, `${sid}: ${seen}`);
    }
  });

  it('geo-targeted prefers the requested country', async () => {
    await use('geo-targeted');
    assert.deepEqual(await rotations(3, { country: 'DE' }), [a, a, a]);
    assert.deepEqual(await rotations(3, { country: 'us' }), [b, b, b]);
    const r = await api.data<Proxied>('POST', '/request', requestBody('/json', { country: 'DE' }));
    assert.equal(r.proxy_id, a);
  });

  it('performance-based picks pool members and serves requests', async () => {
    await use('performance-based');
    for (const id of await rotations(4)) assert.ok([a, b].includes(id));
    const r = await api.data<Proxied>('POST', '/request', requestBody('/json'));
    assert.ok([a, b].includes(r.proxy_id));
  });
});

describe('timeout and max_retries', () => {
  let t: TestApp;
  let api: Api;
  let bad: string;
  before(async () => {
    // The breaker must not take the resetting proxy out: this block counts attempts on it.
    t = await makeApp({ ...LOOPBACK, ROTA_BREAKER_FAILURE_THRESHOLD: '1000' });
    api = await Api.over(injectTransport(t.app));
    bad = await addProxy(api, resetter.port);
    await addProxy(api, de.port);
    await api.data('PUT', '/retry/policy', { body: { base_delay: 0 } });
  });
  after(() => t.close());

  it('timeout: a target slower than the new timeout now times out, and not after the change back', async () => {
    // Two attempts: when the first lands on the resetting proxy, the second still meets the slow target.
    await api.data('PUT', '/config', { body: { timeout: 1, max_retries: 2 } });
    const t0 = performance.now();
    const slow = await api.call('POST', '/request', requestBody('/slow?ms=2500'));
    const took = performance.now() - t0;
    assert.equal(slow.status, 504, slow.text);
    assert.equal((slow.json as { error: { code: string } }).error.code, 'REQUEST_TIMEOUT');
    assert.ok(took >= 900 && took < 2_400, `took ${took} ms: before the target answered`);
    await api.data('PUT', '/config', { body: { timeout: 5 } });
    const ok = await api.data<{ status_code: number }>('POST', '/request', requestBody('/slow?ms=1200'));
    assert.equal(ok.status_code, 200);
  });

  it('max_retries: the number of attempts follows it on the next call', async () => {
    await api.data('PUT', '/config', { body: { rotation_strategy: 'round-robin', max_retries: 1 } });
    const before = resetter.connections;
    const one = [
      await api.call('POST', '/request', requestBody('/json')),
      await api.call('POST', '/request', requestBody('/json')),
    ];
    // Round-robin over two proxies: one of the two calls starts on the resetting proxy and, with a
    // single attempt allowed, fails there.
    assert.deepEqual(one.map((r) => r.status).sort(), [200, 502]);
    assert.equal(resetter.connections - before, 1);
    const failed = one.find((r) => r.status === 502)?.json as {
      error: { code: string; details: { attempts: { proxy_id: string }[] } };
    };
    assert.equal(failed.error.code, 'PROXY_FAILOVER_EXHAUSTED');
    assert.deepEqual(
      failed.error.details.attempts.map((x) => x.proxy_id),
      [bad],
    );

    const view = await api.data<ConfigView>('PUT', '/config', { body: { max_retries: 2 } });
    assert.equal(view.max_retries, 2);
    assert.equal((await api.data<{ max_attempts: number }>('GET', '/retry/policy')).max_attempts, 2);
    const mid = resetter.connections;
    const two = [
      await api.data<Proxied>('POST', '/request', requestBody('/json')),
      await api.data<Proxied>('POST', '/request', requestBody('/json')),
    ];
    // Every call now survives the resetting proxy: a failure there is followed by a second attempt.
    const retries = two.reduce((n, r) => n + r.attempts - 1, 0);
    assert.ok(retries >= 1 && two.every((r) => r.attempts <= 2), JSON.stringify(two));
    assert.equal(resetter.connections - mid, retries);
  });
});

describe('cors_origins', () => {
  let t: TestApp;
  let api: Api;
  before(async () => {
    t = await makeApp({ ROTA_CORS_ORIGINS: 'http://old.example' });
    api = await Api.over(injectTransport(t.app));
  });
  after(() => t.close());

  async function allowed(origin: string): Promise<{ preflight: unknown; actual: unknown }> {
    const pre = await t.app.inject({
      method: 'OPTIONS',
      url: '/api/v1/stats',
      headers: { origin, 'access-control-request-method': 'GET' },
    });
    const actual = await api.call('GET', '/stats', { headers: { origin } });
    assert.equal(actual.status, 200);
    return {
      preflight: pre.headers['access-control-allow-origin'],
      actual: actual.headers['access-control-allow-origin'],
    };
  }

  it('a newly allowed origin gets the CORS headers at once, a removed one no longer does', async () => {
    assert.deepEqual(await allowed('http://old.example'), {
      preflight: 'http://old.example',
      actual: 'http://old.example',
    });
    assert.deepEqual(await allowed('http://new.example:8080'), { preflight: undefined, actual: undefined });
    const view = await api.data<ConfigView>('PUT', '/config', {
      body: { cors_origins: ['http://new.example:8080', 'https://[::1]:9443'] },
    });
    assert.deepEqual(view.cors_origins, ['http://new.example:8080', 'https://[::1]:9443']);
    assert.deepEqual(await allowed('http://new.example:8080'), {
      preflight: 'http://new.example:8080',
      actual: 'http://new.example:8080',
    });
    assert.deepEqual(await allowed('http://old.example'), { preflight: undefined, actual: undefined });
  });
});
