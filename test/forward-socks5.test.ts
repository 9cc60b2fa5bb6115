import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { SocksClient } from 'socks';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { addUpstream, type ListeningApp, listeningApp, readAll, socks5, waitFor } from './helpers/forward.ts';

/*
 * The SOCKS5 listener: every address type, the reply codes of the contract, username parameters, and
 * auth with the API key as the password. Clients are the `socks` package (as libraries use it) and a
 * byte-level one for what no library sends.
 */

const KEY = 'listener-test-key-0123456789';
let target: TargetServer;
let v6: net.Server;
let v6Port: number;
let upstream: ForwardProxy;
let t: ListeningApp;
let proxyId: string;

before(async () => {
  [target, upstream] = await Promise.all([startTarget(), startForwardProxy()]);
  // A target on ::1 for the IPv6 address type: echoes one line.
  v6 = net.createServer((s) => s.once('data', (c) => s.end(`v6 says ${String(c)}`)));
  await new Promise<void>((resolve) => v6.listen(0, '::1', resolve));
  v6Port = (v6.address() as net.AddressInfo).port;
  t = await listeningApp({ ROTA_SSRF_ALLOW: '127.0.0.0/8,::1/128,localhost' });
  proxyId = await addUpstream(t, { url: `http://127.0.0.1:${upstream.port}` });
});

after(async () => {
  await t.close();
  v6.close();
  await Promise.all([target.close(), upstream.close()]);
});

async function viaSocksLibrary(port: number, host: string, targetPort: number, user?: string, pass?: string) {
  const { socket } = await SocksClient.createConnection({
    proxy: { host: '127.0.0.1', port, type: 5, ...(user ? { userId: user, password: pass ?? '' } : {}) },
    command: 'connect',
    destination: { host, port: targetPort },
    timeout: 5_000,
  });
  socket.write(`GET /json HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  return readAll(socket);
}

describe('SOCKS5 CONNECT', () => {
  test('to an IPv4 address, a domain name and an IPv6 address, through the pool', async () => {
    assert.match(await viaSocksLibrary(t.socksPort, '127.0.0.1', target.port), /\{"ok":true\}/);
    assert.match(await viaSocksLibrary(t.socksPort, 'localhost', target.port), /\{"ok":true\}/);
    const r = await socks5(t.socksPort, {
      address: Buffer.from([4, ...Buffer.alloc(15), 1]),
      port: v6Port,
    });
    assert.equal(r.reply, 0x00);
    r.socket.write('hello\n');
    assert.match(await readAll(r.socket), /^v6 says hello/);
    assert.equal(upstream.requests.at(-1)?.target, `[::1]:${v6Port}`);
  });

  test('username parameters: a session keeps one proxy; a bad parameter fails auth (0x01)', async () => {
    const second = await addUpstream(t, { url: `http://127.0.0.1:${upstream.port}`, username: 'two' });
    try {
      const seen = new Set<string>();
      for (let i = 0; i < 4; i++) {
        const before = t.services.pool.get(proxyId)?.stats.total ?? 0;
        const r = await socks5(t.socksPort, { username: 'bot-session-s5', password: 'x', port: target.port });
        assert.equal(r.reply, 0);
        r.socket.destroy();
        seen.add((t.services.pool.get(proxyId)?.stats.total ?? 0) > before ? proxyId : second);
      }
      assert.equal(seen.size, 1, 'one session, one proxy');
      const bad = await socks5(t.socksPort, { username: 'bot-color-red', password: 'x', port: target.port });
      assert.equal(bad.method, 0x02, 'user/pass is chosen when offered, even with auth off');
      assert.equal(bad.authStatus, 0x01);
    } finally {
      await t.services.pool.remove(second);
    }
  });

  test('reply codes: BIND and UDP 0x07, unknown address type 0x08, SSRF 0x02', async () => {
    for (const command of [2, 3]) {
      const r = await socks5(t.socksPort, { command, port: target.port });
      assert.equal(r.reply, 0x07, `command ${command}`);
    }
    const atyp = await socks5(t.socksPort, { address: Buffer.from([9, 1, 2, 3, 4]), port: 80 });
    assert.equal(atyp.reply, 0x08);
    const before = upstream.connections;
    const ssrf = await socks5(t.socksPort, { host: '10.1.2.3', port: 80 });
    assert.equal(ssrf.reply, 0x02);
    assert.equal(upstream.connections, before, 'refused before any proxy is contacted');
    const zero = await socks5(t.socksPort, { host: '127.0.0.1', port: 0 });
    assert.equal(zero.reply, 0x01);
    // A domain name no URL takes (it looks like an IPv4 address out of range): refused, not dropped.
    const badName = await socks5(t.socksPort, { host: '999.1.1.1', port: 80 });
    assert.equal(badName.reply, 0x01);
  });

  test('a greeting without an acceptable method gets 0xFF; garbage closes the connection', async () => {
    const gss = await socks5(t.socksPort, { methods: [0x01], port: 80 });
    assert.equal(gss.method, 0xff, 'no acceptable method');
    const s = net.connect({ host: '127.0.0.1', port: t.socksPort });
    s.write('GET / HTTP/1.1\r\n\r\n');
    assert.equal(await readAll(s), '', 'not SOCKS5: closed without an answer');
  });

  test('the tunnel counts as one request of its proxy, and appears in the listeners totals', async () => {
    const before = t.services.pool.get(proxyId)?.stats.total ?? 0;
    await viaSocksLibrary(t.socksPort, '127.0.0.1', target.port);
    assert.equal(t.services.pool.get(proxyId)?.stats.total, before + 1);
    await waitFor(() => t.services.listeners.info()[1]?.open_tunnels === 0);
    const info = t.services.listeners.info()[1];
    assert.equal(info?.port, t.socksPort);
    assert.ok((info?.totals.socks5?.bytesDown ?? 0) > 0);
  });
});

describe('SOCKS5 with ROTA_REQUIRE_AUTH', () => {
  let a: ListeningApp;
  before(async () => {
    a = await listeningApp({
      ROTA_REQUIRE_AUTH: 'true',
      ROTA_API_KEY: KEY,
      ROTA_AUTH_FAILURE_LIMIT: '4/minute',
    });
    await addUpstream(a, { url: `http://127.0.0.1:${upstream.port}` }).catch(async () => {
      // The API needs the key too.
      const res = await a.app.inject({
        method: 'POST',
        url: '/api/v1/proxies',
        headers: { 'content-type': 'application/json', 'x-api-key': KEY },
        payload: JSON.stringify({ url: `http://127.0.0.1:${upstream.port}` }),
      });
      assert.equal(res.statusCode, 201);
    });
  });
  after(() => a.close());

  test('no user/pass offered: 0xFF; wrong key: status 0x01 and an audit line; the key: a tunnel', async () => {
    const none = await socks5(a.socksPort, { methods: [0x00], port: target.port });
    assert.equal(none.method, 0xff);
    const wrong = await socks5(a.socksPort, { username: 'me', password: 'nope', port: target.port });
    assert.equal(wrong.authStatus, 0x01);
    assert.ok(a.logs.some((l) => l.includes('listener.auth_failed') && l.includes('listener:socks5')));
    assert.ok(!a.logs.some((l) => l.includes('nope')), 'the password never reaches a log');
    const right = await socks5(a.socksPort, { username: 'me-session-k', password: KEY, port: target.port });
    assert.equal(right.authStatus, 0x00);
    assert.equal(right.reply, 0x00);
    right.socket.destroy();
  });

  test('wrong keys spend the failed-auth budget shared with the API; past it even the key is refused', async () => {
    for (let i = 0; i < 4; i++) await socks5(a.socksPort, { username: 'me', password: `bad${i}`, port: 80 });
    const right = await socks5(a.socksPort, { username: 'me', password: KEY, port: target.port });
    assert.equal(right.authStatus, 0x01, 'past the budget: refused at once');
    const api = await a.app.inject({
      url: '/api/v1/status',
      remoteAddress: '127.0.0.1',
      headers: { 'x-api-key': KEY },
    });
    assert.equal(api.statusCode, 429, 'the API sees the same budget for this address');
  });
});
