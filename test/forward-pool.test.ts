import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { type RawFixture, startAuthDemander, startBlackhole, startResetter } from './fixtures/misbehaving.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import {
  addUpstream,
  basic,
  connectVia,
  getOverTunnel,
  type ListeningApp,
  listeningApp,
  viaProxy,
} from './helpers/forward.ts';
import { closedPort as refusingPort } from './helpers/real-proxies.ts';

/*
 * The listeners on the one engine: failover before a tunnel is answered, sessions shared with
 * POST request under every strategy, the country filter, and the pool's own errors.
 */

let target: TargetServer;
let live: ForwardProxy[];
let dead: RawFixture[];
let closedPort: number;

before(async () => {
  [target, live, dead, closedPort] = await Promise.all([
    startTarget(),
    Promise.all([startForwardProxy(), startForwardProxy(), startForwardProxy()]),
    Promise.all([startResetter(), startAuthDemander(), startBlackhole()]),
    refusingPort(),
  ]);
});

after(async () => {
  await Promise.all([target.close(), ...live.map((p) => p.close()), ...dead.map((p) => p.close())]);
});

const url = (path: string) => target.url(path).href;
const authority = () => `127.0.0.1:${target.port}`;

describe('failover', () => {
  let t: ListeningApp;
  let deadIds: string[];
  let liveId: string;
  before(async () => {
    t = await listeningApp({ ROTA_CONNECT_TIMEOUT_S: '1', ROTA_MAX_RETRIES: '5', ROTA_TIMEOUT: '20' });
    deadIds = [
      await addUpstream(t, { url: `http://127.0.0.1:${closedPort}` }),
      await addUpstream(t, { url: `http://127.0.0.1:${dead[0]?.port}` }),
      await addUpstream(t, { url: `http://127.0.0.1:${dead[1]?.port}` }),
    ];
    liveId = await addUpstream(t, { url: `http://127.0.0.1:${live[0]?.port}` });
  });
  after(() => t.close());

  test('a tunnel is answered only once a proxy is connected; proxy faults move on, each blamed', async () => {
    const tun = await connectVia(t.httpPort, authority());
    assert.equal(tun.status, 200);
    assert.match(tun.head, new RegExp(`X-Rota-Proxy-Id: ${liveId}`, 'i'));
    assert.match(await getOverTunnel(tun.socket, authority(), '/json'), /\{"ok":true\}/);
    for (const id of deadIds) {
      const e = t.services.pool.get(id);
      assert.equal(e?.stats.failed, 1, `${id} was tried once and blamed`);
      assert.equal(e?.health, 'degraded');
    }
  });

  test('an absolute-URI request fails over the same way', async () => {
    const r = await viaProxy(t.httpPort, url('/json'));
    assert.equal(r.status, 200);
    assert.equal(r.headers['x-rota-proxy-id'], liveId);
  });

  test('with only dead proxies: 502 PROXY_FAILOVER_EXHAUSTED, then breakers open and 503 with Retry-After', async () => {
    await t.services.pool.remove(liveId);
    const r = await connectVia(t.httpPort, authority());
    assert.equal(r.status, 502);
    assert.match(r.head, /X-Rota-Error: PROXY_FAILOVER_EXHAUSTED/);
    assert.doesNotMatch(r.head, /X-Rota-Proxy-Id/i);
    for (let i = 0; i < 6; i++) await viaProxy(t.httpPort, url('/json'));
    const empty = await viaProxy(t.httpPort, url('/json'));
    assert.equal(empty.status, 503);
    assert.equal(empty.headers['x-rota-error'], 'PROXY_POOL_EMPTY');
    assert.match(String(empty.headers['retry-after']), /^\d+$/);
    assert.equal(t.services.breakers.state(deadIds[0] ?? ''), 'open', 'listener traffic opens breakers');
  });
});

describe('sessions and countries', () => {
  let t: ListeningApp;
  let ids: string[];
  let deId: string;
  before(async () => {
    t = await listeningApp();
    ids = [];
    for (const p of live) ids.push(await addUpstream(t, { url: `http://127.0.0.1:${p.port}` }));
    deId = await addUpstream(t, { url: `http://127.0.0.1:${live[0]?.port}`, username: 'de', country: 'DE' });
  });
  after(() => t.close());

  for (const strategy of ['round-robin', 'random', 'least-used'] as const) {
    test(`${strategy}: one session id is one proxy on the listener and on POST request`, async () => {
      await t.app.inject({
        method: 'PUT',
        url: '/api/v1/config',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ rotation_strategy: strategy }),
      });
      const auth = { 'proxy-authorization': basic(`scraper-session-${strategy.replace('-', '_')}`, 'x') };
      const first = await viaProxy(t.httpPort, url('/json'), { headers: auth });
      const pinned = first.headers['x-rota-proxy-id'];
      assert.ok(pinned);
      for (let i = 0; i < 5; i++) {
        const again = await viaProxy(t.httpPort, url('/json'), { headers: auth });
        assert.equal(again.headers['x-rota-proxy-id'], pinned);
        const tun = await connectVia(t.httpPort, authority(), auth);
        assert.match(tun.head, new RegExp(`X-Rota-Proxy-Id: ${pinned}`, 'i'));
        tun.socket.destroy();
      }
      const api = await t.app.inject({
        method: 'POST',
        url: '/api/v1/request',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ url: url('/json'), session_id: strategy.replace('-', '_') }),
      });
      assert.equal((api.json() as { data: { proxy_id: string } }).data.proxy_id, pinned);
    });
  }

  test('X-Rota-Session works alone, agrees with the username, and a contradiction is 400', async () => {
    const a = await viaProxy(t.httpPort, url('/json'), { headers: { 'x-rota-session': 'hdr1' } });
    const b = await viaProxy(t.httpPort, url('/json'), {
      headers: { 'x-rota-session': 'hdr1', 'proxy-authorization': basic('x-session-hdr1', '') },
    });
    assert.equal(a.headers['x-rota-proxy-id'], b.headers['x-rota-proxy-id']);
    const bad = await viaProxy(t.httpPort, url('/json'), {
      headers: { 'x-rota-session': 'other', 'proxy-authorization': basic('x-session-hdr1', '') },
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.headers['x-rota-error'], 'INVALID_PROXY_PARAMS');
    const tun = await connectVia(t.httpPort, authority(), { 'Proxy-Authorization': basic('x-bogus-1', '') });
    assert.equal(tun.status, 400);
    assert.match(tun.head, /X-Rota-Error: INVALID_PROXY_PARAMS/);
  });

  test('country is a hard filter: only that country serves; none of it is 503 without Retry-After', async () => {
    for (let i = 0; i < 4; i++) {
      const r = await viaProxy(t.httpPort, url('/json'), { headers: { 'x-rota-country': 'de' } });
      assert.equal(r.headers['x-rota-proxy-id'], deId);
    }
    const tun = await connectVia(t.httpPort, authority(), {
      'Proxy-Authorization': basic('u-country-DE', ''),
    });
    assert.match(tun.head, new RegExp(`X-Rota-Proxy-Id: ${deId}`, 'i'));
    tun.socket.destroy();
    const none = await viaProxy(t.httpPort, url('/json'), { headers: { 'x-rota-country': 'FR' } });
    assert.equal(none.status, 503);
    assert.equal(none.headers['x-rota-error'], 'PROXY_POOL_EMPTY');
    assert.equal(none.headers['retry-after'], undefined);
    assert.ok(ids.length === 3);
  });
});

describe('an empty pool', () => {
  test('is 503 PROXY_POOL_EMPTY on both paths', async () => {
    const t = await listeningApp();
    try {
      const r = await viaProxy(t.httpPort, url('/json'));
      assert.equal(r.status, 503);
      assert.equal(r.headers['x-rota-error'], 'PROXY_POOL_EMPTY');
      const tun = await connectVia(t.httpPort, authority());
      assert.equal(tun.status, 503);
    } finally {
      await t.close();
    }
  });
});
