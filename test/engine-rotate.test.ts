import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import type { TestApp } from './helpers/app.ts';
import { addProxy, engineApp, getProxy, proxiedOk, putConfig } from './helpers/engine.ts';

/* GET rotate, and strategy switches through PUT config taking effect on the next request. */

let target: TargetServer;
let proxies: ForwardProxy[];
let t: TestApp;
let ids: string[];
const COUNTRIES = ['DE', 'US', 'FR'];

before(async () => {
  [target, ...proxies] = await Promise.all([
    startTarget(),
    startForwardProxy(),
    startForwardProxy(),
    startForwardProxy(),
  ]);
  t = await engineApp();
});
after(async () => {
  await t.close();
  await Promise.all([target, ...proxies].map((f) => f.close()));
});

async function rotate(query = ''): Promise<string> {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/rotate${query}` });
  assert.equal(res.statusCode, 200, res.body);
  const data = res.json().data;
  assert.equal(data.url.includes('@'), false);
  return data.id as string;
}

/** Everything that a request would change and rotate must not. */
async function counters() {
  const stats = (await t.app.inject({ method: 'GET', url: '/api/v1/stats' })).json().data;
  const breakers = (await t.app.inject({ method: 'GET', url: '/api/v1/circuit-breakers' })).json().data;
  const perProxy = await Promise.all(ids.map((id) => getProxy(t, id)));
  return {
    requests: stats.requests_total,
    proxyStats: perProxy.map((p) => [p.stats, p.health]),
    breakers: breakers.map((b: { state: string; failure_count: number }) => [b.state, b.failure_count]),
    traffic: proxies.map((p) => p.requests.length),
  };
}

describe('GET rotate', () => {
  test('an empty pool is 503 PROXY_POOL_EMPTY', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/rotate' });
    assert.equal(res.statusCode, 503);
    assert.equal(res.json().error.code, 'PROXY_POOL_EMPTY');
    ids = [];
    for (const [i, p] of proxies.entries()) {
      ids.push(await addProxy(t, { url: `http://127.0.0.1:${p.port}`, country: COUNTRIES[i] }));
    }
  });

  test('round-robin advances across calls and touches no counter', async () => {
    const before = await counters();
    const picked: string[] = [];
    for (let i = 0; i < 6; i++) picked.push(await rotate());
    assert.deepEqual(picked, [...ids, ...ids]);
    assert.deepEqual(await counters(), before);
    const status = (await t.app.inject({ method: 'GET', url: '/api/v1/status' })).json();
    assert.notEqual(status.pool_stats.last_rotation, null);
  });

  test('rotate and requests share one rotation', async () => {
    assert.equal(await rotate(), ids[0]);
    assert.equal((await proxiedOk(t, { url: target.url('/json').href })).proxy_id, ids[1]);
    assert.equal(await rotate(), ids[2]);
  });
});

describe('strategy switches take effect on the next request', () => {
  test('session-persistence keeps a session_id on one proxy', async () => {
    await putConfig(t, { rotation_strategy: 'session-persistence' });
    for (const session of ['alpha', 'beta']) {
      const first = await proxiedOk(t, { url: target.url('/json').href, session_id: session });
      for (let i = 0; i < 4; i++) {
        const d = await proxiedOk(t, { url: target.url('/json').href, session_id: session });
        assert.equal(d.proxy_id, first.proxy_id, session);
      }
      assert.equal(await rotate(`?session_id=${session}`), first.proxy_id);
    }
    const noSession = new Set<string>();
    for (let i = 0; i < 3; i++)
      noSession.add((await proxiedOk(t, { url: target.url('/json').href })).proxy_id);
    assert.equal(noSession.size, 3, 'without a session id it rotates');
  });

  test('geo-targeted picks a proxy of the requested country', async () => {
    await putConfig(t, { rotation_strategy: 'geo-targeted' });
    for (const [i, country] of COUNTRIES.entries()) {
      for (let n = 0; n < 3; n++) {
        const d = await proxiedOk(t, { url: target.url('/json').href, country: country.toLowerCase() });
        assert.equal(d.proxy_id, ids[i], country);
      }
      assert.equal(await rotate(`?country=${country}`), ids[i]);
    }
    // No proxy in Japan: the strategy prefers a match, and falls back to any proxy rather than failing.
    const jp = await proxiedOk(t, { url: target.url('/json').href, country: 'JP' });
    assert.ok(ids.includes(jp.proxy_id));
  });

  test('back to round-robin: requests spread again', async () => {
    await putConfig(t, { rotation_strategy: 'round-robin' });
    const used = new Set<string>();
    for (let i = 0; i < 3; i++) {
      used.add((await proxiedOk(t, { url: target.url('/json').href, country: 'DE' })).proxy_id);
    }
    assert.equal(used.size, 3);
    const config = (await t.app.inject({ method: 'GET', url: '/api/v1/status' })).json();
    assert.equal(config.rotation_strategy, 'round-robin');
  });
});
