import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import {
  addUpstream,
  connectVia,
  getOverTunnel,
  type ListeningApp,
  listeningApp,
  socks5,
  viaProxy,
  waitFor,
} from './helpers/forward.ts';
import { freePort, type RealProxy, startDante, startSquid } from './helpers/real-proxies.ts';

/*
 * One client's choice of target must never take a proxy away from the others. Stock squid answers 403
 * to CONNECT on any port but 443, and a dante whose rules block a port answers "not allowed": those are
 * refusals of one target by one proxy, held against the pair (proxy, host:port), never the proxy.
 */

let target: TargetServer;
/** A plain TCP server on port 443 of a loopback address of its own: the port stock squid lets CONNECT reach. */
let on443: { host: string; server: net.Server };

async function listen443(): Promise<{ host: string; server: net.Server }> {
  for (let i = 0; i < 20; i++) {
    const host = `127.0.${10 + Math.floor(Math.random() * 200)}.${2 + Math.floor(Math.random() * 250)}`;
    const server = net.createServer((s) => {
      s.on('error', () => {});
      s.end('HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\n443!');
    });
    const ok = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(443, host, () => resolve(true));
    });
    if (ok) return { host, server };
  }
  throw new Error('no loopback address with port 443 free (the test runs as root to bind it)');
}

before(async () => {
  [target, on443] = await Promise.all([startTarget(), listen443()]);
});
after(async () => {
  await target.close();
  await new Promise((r) => on443.server.close(r));
});

async function breakerStates(t: ListeningApp, ids: readonly string[]): Promise<string[]> {
  return ids.map((id) => t.services.breakers.state(id));
}

describe('stock squid: CONNECT to a port other than 443', () => {
  let squids: RealProxy[];
  let t: ListeningApp;
  let ids: string[];
  before(async () => {
    squids = await Promise.all([startSquid({ stockRules: true }), startSquid({ stockRules: true })]);
    t = await listeningApp({ ROTA_MAX_RETRIES: '3' });
    ids = await Promise.all(squids.map((s) => addUpstream(t, { url: `http://127.0.0.1:${s.port}` })));
  });
  after(async () => {
    await t.close();
    await Promise.all(squids.map((s) => s.close()));
  });

  test('forty refused CONNECTs open no breaker; every other target keeps every proxy', async () => {
    const refusedPort = await freePort();
    const before = ids.map((id) => t.services.pool.get(id)?.health);
    for (let i = 0; i < 40; i++) {
      const tun = await connectVia(t.httpPort, `127.0.0.1:${refusedPort}`);
      assert.equal(tun.status, 502, tun.head);
      assert.match(tun.head, /X-Rota-Error: PROXY_FAILOVER_EXHAUSTED/i);
      tun.socket.destroy();
    }
    assert.deepEqual(await breakerStates(t, ids), ['closed', 'closed']);
    assert.deepEqual(
      ids.map((id) => t.services.pool.get(id)?.health),
      before,
      'a refusal of one target leaves health alone',
    );
    for (const id of ids) assert.equal(t.services.pool.get(id)?.stats.failed, 0);
    // Both pairs cool down for that host:port only.
    const cooling = t.services.refusals.table.active(`127.0.0.1:${refusedPort}`);
    assert.deepEqual(cooling.map((c) => c.proxyId).sort(), [...ids].sort());

    // Every other client: absolute-URI requests through both proxies, and CONNECT to port 443.
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const r = await viaProxy(t.httpPort, target.url(`/echo?i=${i}`).href);
      assert.equal(r.status, 200);
      seen.add(String(r.headers['x-rota-proxy-id']));
    }
    assert.deepEqual([...seen].sort(), [...ids].sort(), 'both proxies still serve other targets');
    const tun = await connectVia(t.httpPort, `${on443.host}:443`);
    assert.equal(tun.status, 200, tun.head);
    assert.match(await getOverTunnel(tun.socket, on443.host, '/'), /443!$/);
  });
});

describe('stock squid: an absolute-URI request to a port outside its Safe_ports', () => {
  let squids: RealProxy[];
  let t: ListeningApp;
  let ids: string[];
  before(async () => {
    squids = await Promise.all([startSquid({ stockRules: true }), startSquid({ stockRules: true })]);
    t = await listeningApp({ ROTA_MAX_RETRIES: '3' });
    ids = await Promise.all(squids.map((s) => addUpstream(t, { url: `http://127.0.0.1:${s.port}` })));
  });
  after(async () => {
    await t.close();
    await Promise.all(squids.map((s) => s.close()));
  });

  test("squid's own 403 (ERR_ACCESS_DENIED) cools host:port, not the host, and opens no breaker", async () => {
    for (let i = 0; i < 20; i++) {
      const r = await viaProxy(t.httpPort, `http://127.0.0.1:1000/p${i}`);
      assert.equal(r.status, 502, r.body.toString());
      assert.equal(r.headers['x-rota-error'], 'PROXY_FAILOVER_EXHAUSTED');
    }
    assert.deepEqual(await breakerStates(t, ids), ['closed', 'closed']);
    assert.deepEqual(
      t.services.refusals.table
        .active('127.0.0.1:1000')
        .map((c) => c.proxyId)
        .sort(),
      [...ids].sort(),
    );
    assert.equal(t.services.cooldowns.active('127.0.0.1').length, 0, 'no ban of the whole host');
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const r = await viaProxy(t.httpPort, target.url(`/echo?i=${i}`).href);
      assert.equal(r.status, 200);
      seen.add(String(r.headers['x-rota-proxy-id']));
    }
    assert.deepEqual([...seen].sort(), [...ids].sort(), 'the same host on another port keeps both');
  });
});

describe('a proxy refusing many targets is judged by a health check, never by the refusals', () => {
  let squid: RealProxy;
  const apps: ListeningApp[] = [];
  before(async () => {
    squid = await startSquid({ stockRules: true });
  });
  after(async () => {
    await Promise.all(apps.map((a) => a.close()));
    await squid.close();
  });

  async function refuseMany(healthUrl: string) {
    const t = await listeningApp({ ROTA_MAX_RETRIES: '1', ROTA_HEALTH_CHECK_URL: healthUrl });
    apps.push(t);
    const id = await addUpstream(t, { url: `http://127.0.0.1:${squid.port}` });
    for (let i = 0; i < 6; i++) {
      const tun = await connectVia(t.httpPort, `127.0.0.1:${await freePort()}`);
      assert.equal(tun.status, 502);
      tun.socket.destroy();
    }
    await waitFor(() => t.services.pool.get(id)?.health !== 'unknown');
    return { t, id };
  }

  test('the health-check URL works through it: the proxy stays in use', async () => {
    const { t, id } = await refuseMany(target.url('/echo').href);
    assert.equal(t.services.pool.get(id)?.health, 'healthy');
    assert.equal(t.services.breakers.state(id), 'closed');
    assert.equal((await viaProxy(t.httpPort, target.url('/echo').href)).status, 200);
  });

  test("the proxy refuses the operator's health-check URL too: that counts against it", async () => {
    const { t, id } = await refuseMany(`https://127.0.0.1:${await freePort()}/`);
    assert.equal(t.services.pool.get(id)?.health, 'degraded');
    assert.equal(t.services.pool.get(id)?.stats.failed, 1);
  });
});

describe('dante refusing a port by its rules (SOCKS5 reply 2)', () => {
  let dante: RealProxy;
  let t: ListeningApp;
  let id: string;
  let blocked: number;
  before(async () => {
    blocked = await freePort();
    dante = await startDante({ blockPort: blocked });
    t = await listeningApp({ ROTA_MAX_RETRIES: '1' });
    id = await addUpstream(t, { url: `socks5://127.0.0.1:${dante.port}` });
  });
  after(async () => {
    await t.close();
    await dante.close();
  });

  test('refusals through the SOCKS5 listener cool the pair, never the proxy', async () => {
    const health = t.services.pool.get(id)?.health;
    for (let i = 0; i < 12; i++) {
      const r = await socks5(t.socksPort, { host: '127.0.0.1', port: blocked });
      assert.notEqual(r.reply, 0, 'the blocked port is refused');
      r.socket.destroy();
    }
    assert.equal(t.services.breakers.state(id), 'closed');
    assert.equal(t.services.pool.get(id)?.health, health);
    assert.equal(t.services.pool.get(id)?.stats.failed, 0);
    assert.equal(t.services.refusals.table.active(`127.0.0.1:${blocked}`).length, 1);
    const ok = await socks5(t.socksPort, { host: '127.0.0.1', port: target.port });
    assert.equal(ok.reply, 0, 'another port of the same host still goes through the proxy');
    assert.match(await getOverTunnel(ok.socket, `127.0.0.1:${target.port}`, '/echo'), /^HTTP\/1\.1 200/);
  });
});
