import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { testTls } from './fixtures/certs.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { type SocksFixture, startSocksFixture } from './fixtures/socks.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import {
  addUpstream,
  basic,
  connectVia,
  getOverTunnel,
  type ListeningApp,
  listeningApp,
  readAll,
  socks5,
  viaProxy,
} from './helpers/forward.ts';
import { type RealProxy, startAllOrClose, startDante, startTinyproxy } from './helpers/real-proxies.ts';

/*
 * Every kind of upstream behind every door: http, https, socks4, socks4a, socks5 and socks5h, with and
 * without credentials, each reached through an absolute-URI request, a CONNECT tunnel and a SOCKS5
 * tunnel. Real tinyproxy and dante where they speak the protocol; fixtures for an https:// proxy and
 * SOCKS4a. Each upstream gets a country of its own, so the listener's country parameter picks it.
 */

const USER = 'fwd-user';
const SECRET = 'fwd-secret';
let target: TargetServer;
let tinyproxy: RealProxy;
let dante: RealProxy;
let danteAuth: RealProxy;
let tlsProxy: ForwardProxy;
let socksFixture: SocksFixture;
let t: ListeningApp;
const kinds: { name: string; country: string; id: string }[] = [];

before(async () => {
  const material = await testTls();
  const auth = { username: USER, password: SECRET };
  [target, tinyproxy, dante, danteAuth, tlsProxy, socksFixture] = await startAllOrClose([
    startTarget(),
    startTinyproxy({ auth }),
    startDante(),
    startDante({ auth: true }),
    startForwardProxy({ auth, tls: material }),
    startSocksFixture({ auth }),
  ]);
  t = await listeningApp({}, { upstreamTls: { ca: material.ca } });
  const add = async (name: string, country: string, body: Record<string, unknown>) => {
    kinds.push({ name, country, id: await addUpstream(t, { ...body, country }) });
  };
  const at = (scheme: string, port: number) => `${scheme}://localhost:${port}`;
  await add('http + credentials (tinyproxy)', 'US', { url: at('http', tinyproxy.port), ...auth });
  await add('https + credentials (fixture)', 'GB', { url: at('https', tlsProxy.port), ...auth });
  await add('socks4 (dante)', 'DE', { url: at('socks4', dante.port) });
  await add('socks4a + user id (fixture)', 'FR', { url: at('socks4a', socksFixture.port), username: USER });
  await add('socks5 (dante)', 'IT', { url: at('socks5', dante.port) });
  await add('socks5h (dante)', 'ES', { url: at('socks5h', dante.port) });
  await add('socks5 + credentials (dante)', 'NL', {
    url: at('socks5', danteAuth.port),
    username: danteAuth.username,
    password: danteAuth.password,
  });
  await add('socks5h + credentials (fixture)', 'BE', { url: at('socks5h', socksFixture.port), ...auth });
});

after(async () => {
  await t?.close();
  await Promise.all([target, tinyproxy, dante, danteAuth, tlsProxy, socksFixture].map((f) => f?.close()));
});

test('each upstream kind serves an absolute-URI request, a CONNECT tunnel and a SOCKS5 tunnel', async () => {
  const where = `127.0.0.1:${target.port}`;
  for (const k of kinds) {
    const user = `kinds-country-${k.country.toLowerCase()}`;
    const r = await viaProxy(t.httpPort, target.url('/json').href, {
      headers: { 'proxy-authorization': basic(user, '') },
    });
    assert.equal(r.status, 200, `${k.name}: absolute-URI ${r.body.toString()}`);
    assert.equal(r.headers['x-rota-proxy-id'], k.id, k.name);
    const tun = await connectVia(t.httpPort, where, { 'Proxy-Authorization': basic(user, '') });
    assert.equal(tun.status, 200, `${k.name}: CONNECT ${tun.head}`);
    assert.match(await getOverTunnel(tun.socket, where, '/json'), /\{"ok":true\}/, `${k.name}: CONNECT`);
    const s = await socks5(t.socksPort, {
      username: user,
      password: '',
      host: '127.0.0.1',
      port: target.port,
    });
    assert.equal(s.reply, 0, `${k.name}: SOCKS5`);
    s.socket.write(`GET /json HTTP/1.1\r\nHost: ${where}\r\nConnection: close\r\n\r\n`);
    assert.match(await readAll(s.socket), /\{"ok":true\}/, `${k.name}: SOCKS5`);
    const e = t.services.pool.get(k.id);
    assert.equal(e?.stats.failed, 0, k.name);
    assert.equal(e?.stats.total, 3, `${k.name}: three calls counted`);
  }
});
