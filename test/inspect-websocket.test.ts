import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type TlsMaterial, testTls } from './fixtures/certs.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startWsSite, type WsSite } from './fixtures/ws-site.ts';
import { addUpstream, type ListeningApp, listeningApp, waitFor } from './helpers/forward.ts';
import { wsEcho } from './helpers/ws-client.ts';

/*
 * A WebSocket inside an inspected HTTPS connection (src/forward/inspect-upgrade.ts): the upgrade goes
 * through a proxy picked for it, TLS with the target verified with the engine's trust, and the frames
 * flow both ways until either side closes. Client and server are written by hand (no WebSocket library).
 */

const EGRESS = ['127.0.0.3', '127.0.0.4'];

let material: TlsMaterial;
let site: WsSite;
let proxies: ForwardProxy[];
let t: ListeningApp;
let egressOf: Map<string, string>;
let ca: string;

before(async () => {
  material = await testTls();
  site = await startWsSite(material);
  proxies = await Promise.all(EGRESS.map((egress) => startForwardProxy({ egress })));
  t = await listeningApp({ ROTA_INSPECT_HOSTS: '127.0.0.1' }, { upstreamTls: { ca: material.ca } });
  egressOf = new Map();
  for (const [i, p] of proxies.entries()) {
    egressOf.set(await addUpstream(t, { url: `http://127.0.0.1:${p.port}` }), EGRESS[i] ?? '');
  }
  ca = await t.services.inspection.authority.caPem();
});

after(async () => {
  await t.close();
  await Promise.all([site.close(), ...proxies.map((p) => p.close())]);
});

const ws = (extra: Partial<Parameters<typeof wsEcho>[0]> = {}) =>
  wsEcho({ proxyPort: t.httpPort, host: '127.0.0.1', port: site.port, ca, ...extra });

describe('WebSocket inside an inspected connection', () => {
  test('the echo arrives, and the target saw the connection from the proxy named in X-Rota-Proxy-Id', async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const before = site.upgrades.length;
      const r = await ws({ message: `message ${i} ✓` });
      assert.equal(r.status, 101, r.body);
      assert.ok(r.acceptOk, 'Sec-WebSocket-Accept made from the client’s own key');
      assert.equal(r.echo, `message ${i} ✓`);
      const id = r.headers['x-rota-proxy-id'] ?? '';
      assert.ok(egressOf.has(id), `X-Rota-Proxy-Id is Rota's (${id}), never the target's`);
      assert.equal(site.upgrades.length, before + 1);
      assert.equal(site.upgrades.at(-1)?.from, egressOf.get(id), 'the target saw the proxy’s egress');
      seen.add(id);
    }
    assert.equal(seen.size, 2, 'each upgrade is a pick of the strategy');
    // Each client closed its connection: the relayed ones and their TLS connections are all gone.
    const totals = t.services.listeners.metrics.totals;
    await waitFor(() => totals.inspect.openTunnels === 0 && site.openSockets() === 0);
  });

  test('the upgrade request reaches the target without Proxy-* or X-Rota-* headers', async () => {
    const r = await ws({ headers: { 'X-Rota-Session': 'ws1', 'Proxy-Thing': 'x', 'X-Kept': 'y' } });
    assert.equal(r.status, 101);
    const names = site.upgrades.at(-1)?.headerNames ?? [];
    assert.deepEqual(
      names.filter((n) => /^(proxy-|x-)/i.test(n)),
      ['X-Kept'],
    );
    assert.deepEqual(names.slice(0, 2), ['Host', 'Upgrade'], 'names in the client’s order and case');
  });

  test('X-Rota-Session on the upgrade keeps one proxy', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const r = await ws({ headers: { 'X-Rota-Session': 'ws_sticky' } });
      assert.equal(r.status, 101);
      ids.add(r.headers['x-rota-proxy-id'] ?? '');
    }
    assert.equal(ids.size, 1);
  });

  test('no proxy can serve it, or bad parameters: an answer with X-Rota-Error on the client’s socket', async () => {
    const before = site.upgrades.length;
    const none = await ws({ headers: { 'X-Rota-Country': 'DE' } });
    assert.equal(none.status, 503, none.body);
    assert.equal(none.headers['x-rota-error'], 'PROXY_POOL_EMPTY');
    assert.equal(none.headers['x-rota-proxy-id'], undefined);
    const bad = await ws({ headers: { 'X-Rota-Country': 'ZZ' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.headers['x-rota-error'], 'INVALID_PROXY_PARAMS');
    assert.equal(site.upgrades.length, before, 'nothing reached the target');
  });

  test('a target certificate Rota does not trust: 502 TARGET_CERT_INVALID, nothing relayed', async () => {
    const strict = await listeningApp({ ROTA_INSPECT_HOSTS: '127.0.0.1' });
    try {
      await addUpstream(strict, { url: `http://127.0.0.1:${proxies[0]?.port}` });
      const strictCa = await strict.services.inspection.authority.caPem();
      const before = site.messages.length;
      const r = await wsEcho({
        proxyPort: strict.httpPort,
        host: '127.0.0.1',
        port: site.port,
        ca: strictCa,
      });
      assert.equal(r.status, 502);
      assert.equal(r.headers['x-rota-error'], 'TARGET_CERT_INVALID');
      assert.equal(site.messages.length, before);
    } finally {
      await strict.close();
    }
  });
});
