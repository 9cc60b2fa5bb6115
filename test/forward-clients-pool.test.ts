import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type TlsMaterial, testTls } from './fixtures/certs.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import {
  launchProxiedBrowser,
  type ProxiedBrowser,
  type Site,
  startSite,
} from './helpers/forward-browser.ts';
import { assertCurlOk, curl, echoPath, proxyIdOf, pythonGet } from './helpers/forward-clients.ts';
import { behindRelay, type RotaGateway, startRotaGateway, type Upstream } from './helpers/forward-rota.ts';
import { startAllOrClose, startDante, startSquid } from './helpers/real-proxies.ts';

/*
 * Rota's listeners in front of a pool of three real upstreams, each behind a counting relay: routing
 * parameters in the proxy username (session, country), Python requests, and headless Chromium.
 *
 * No tinyproxy in this pool: tinyproxy closes its connection after every answer without announcing it,
 * and a request Rota sends on such a connection just before the close fails (502
 * PROXY_FAILOVER_EXHAUSTED with a pool of one; the breaker opens after five).
 * forward-clients.test.ts sends each tinyproxy one absolute-URI request, on a fresh connection.
 */

const SQUID_AUTH = { username: 'squid-up', password: 'Squid-up-pw-2' };

let tls: TlsMaterial;
let http: TargetServer;
let https: TargetServer;
let site: Site;
let rota: RotaGateway;
let browser: ProxiedBrowser;
let ups: Upstream[] = [];
const ids = { none: '', us: '', de: '' };

before(async () => {
  tls = await testTls();
  const [h, s, st, r, b, squidAuth, squid, dante] = await startAllOrClose([
    startTarget(),
    startTarget({ tls }),
    startSite(tls),
    startRotaGateway(),
    launchProxiedBrowser(),
    startSquid({ auth: SQUID_AUTH }),
    startSquid(),
    startDante(),
  ]);
  [http, https, site, rota, browser] = [h, s, st, r, b];
  ups = await Promise.all([
    behindRelay('squid with credentials', 'http', squidAuth),
    behindRelay('squid', 'http', squid),
    behindRelay('dante', 'socks5h', dante),
  ]);
  ids.none = await rota.addProxy(up('squid with credentials').body());
  ids.us = await rota.addProxy(up('squid').body({ country: 'US' }));
  ids.de = await rota.addProxy(up('dante').body({ country: 'DE' }));
});

after(async () => {
  await browser?.close();
  await rota?.close();
  // Unset when `before` failed: startAllOrClose has closed what it started.
  await Promise.all([http, https, site, ...ups].map((f) => f?.close()));
});

function up(name: string): Upstream {
  const found = ups.find((u) => u.name === name);
  if (!found) throw new Error(`no upstream ${name}`);
  return found;
}

const pool = () => new Set(Object.values(ids));

/** X-Rota-Proxy-Id of `n` absolute-URI requests made one after the other. */
async function idsFor(n: number, proxyUser?: string): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await curl(http.url('/json').href, {
      proxy: rota.httpProxy,
      ...(proxyUser ? { proxyUser } : {}),
    });
    assertCurlOk(r, `request ${i} as ${proxyUser ?? 'nobody'}`);
    out.push(r.headers['x-rota-proxy-id'] ?? 'none');
  }
  return out;
}

describe('routing parameters in the proxy username (curl)', () => {
  it('rotates without a session; label-session-abc sticks to one proxy, tunnels too', async () => {
    const rotating = await idsFor(6);
    assert.ok(new Set(rotating).size > 1, `round-robin moves on: ${rotating.join(' ')}`);
    for (const id of rotating) assert.ok(pool().has(id));
    const sticky = await idsFor(5, 'shop-session-abc:any');
    assert.equal(new Set(sticky).size, 1, `one proxy for the session: ${sticky.join(' ')}`);
    assert.ok(pool().has(sticky[0] ?? ''));
    const proxyUser = 'shop-session-abc:any';
    const tunnel = await curl(https.url('/json').href, { proxy: rota.httpProxy, proxyUser, ca: tls.ca });
    assertCurlOk(tunnel, 'CONNECT in the session');
    assert.equal(proxyIdOf(tunnel), sticky[0]);
  });

  it('-country-de uses only the proxy added with country DE, on both listeners', async () => {
    assert.deepEqual(await idsFor(4, 'shop-country-de:any'), [ids.de, ids.de, ids.de, ids.de]);
    assert.deepEqual(await idsFor(2, 'shop-session-s2-country-de:any'), [ids.de, ids.de]);
    const proxyUser = 'shop-country-DE:any';
    const tunnel = await curl(https.url('/json').href, { proxy: rota.httpProxy, proxyUser, ca: tls.ca });
    assertCurlOk(tunnel, 'CONNECT to DE');
    assert.equal(proxyIdOf(tunnel), ids.de);
    const dante = up('dante').relay;
    const others = [up('squid with credentials').relay, up('squid').relay];
    const before = others.map((r) => r.lines.length);
    for (let i = 0; i < 3; i++) {
      const r = await curl(http.url(`/echo?socks-de=${i}`).href, {
        socks5Hostname: rota.socksAddr,
        proxyUser: 'shop-country-de:any',
      });
      assertCurlOk(r, 'SOCKS5 to DE');
      assert.equal(dante.count(`/echo?socks-de=${i} `), 1, `crossed dante: ${dante.lines.join('\n')}`);
    }
    assert.deepEqual(
      others.map((r) => r.lines.length),
      before,
      'the other proxies saw nothing',
    );
  });

  it('a country no proxy has: 503 PROXY_POOL_EMPTY; an unassigned code: 400 INVALID_PROXY_PARAMS', async () => {
    const none = await curl(http.url('/json').href, {
      proxy: rota.httpProxy,
      proxyUser: 'shop-country-fr:any',
    });
    assert.equal(none.status, 503);
    assert.equal(none.headers['x-rota-error'], 'PROXY_POOL_EMPTY');
    const bad = await curl(http.url('/json').href, {
      proxy: rota.httpProxy,
      proxyUser: 'shop-country-zz:any',
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.headers['x-rota-error'], 'INVALID_PROXY_PARAMS');
    const socks = await curl(http.url('/json').href, {
      socks5Hostname: rota.socksAddr,
      proxyUser: 'shop-country-fr:any',
    });
    assert.equal(socks.code, 97, `SOCKS5 refuses the request: ${socks.stderr}`);
  });
});

describe('Python requests through a pool', () => {
  it('http and https targets through the HTTP listener; session and country in the proxy URL', async () => {
    const plain = await pythonGet(http.url('/echo?client=py').href, { proxy: rota.httpProxy });
    assert.deepEqual([plain.error, plain.status, echoPath(plain)], [null, 200, '/echo?client=py']);
    assert.ok(pool().has(plain.headers['x-rota-proxy-id'] ?? ''));
    const tlsd = await pythonGet(https.url('/echo?client=py-tls').href, {
      proxy: rota.httpProxy,
      ca: tls.ca,
    });
    assert.deepEqual([tlsd.error, tlsd.status, echoPath(tlsd)], [null, 200, '/echo?client=py-tls']);
    const session = `http://py-session-p1:any@127.0.0.1:${rota.httpPort}`;
    const a = await pythonGet(http.url('/json').href, { proxy: session });
    const b = await pythonGet(http.url('/json').href, { proxy: session });
    assert.equal(a.status, 200);
    assert.ok(pool().has(a.headers['x-rota-proxy-id'] ?? ''));
    assert.equal(b.headers['x-rota-proxy-id'], a.headers['x-rota-proxy-id'], 'sticky');
    const de = await pythonGet(http.url('/json').href, {
      proxy: `http://py-country-de:x@127.0.0.1:${rota.httpPort}`,
    });
    assert.equal(de.headers['x-rota-proxy-id'], ids.de);
  });

  it('http and https targets through the SOCKS5 listener (socks5h://)', async () => {
    const proxy = `socks5h://127.0.0.1:${rota.socksPort}`;
    const plain = await pythonGet(http.url('/echo?client=py-socks').href, { proxy });
    assert.deepEqual([plain.error, plain.status, echoPath(plain)], [null, 200, '/echo?client=py-socks']);
    const tlsd = await pythonGet(https.url('/echo?client=py-socks-tls').href, { proxy, ca: tls.ca });
    assert.deepEqual([tlsd.error, tlsd.status, echoPath(tlsd)], [null, 200, '/echo?client=py-socks-tls']);
    const de = `socks5h://py-country-de:x@127.0.0.1:${rota.socksPort}`;
    const viaDe = await pythonGet(http.url('/echo?client=py-socks-de').href, { proxy: de });
    assert.equal(viaDe.status, 200);
    assert.equal(up('dante').relay.count('/echo?client=py-socks-de '), 1, 'the DE proxy carried it');
  });
});

describe('headless Chromium through a pool', () => {
  for (const listener of ['HTTP', 'SOCKS5'] as const) {
    it(`loads an https page, its script and its data through the ${listener} listener, without errors`, async () => {
      const tunnels = () => ups.reduce((n, u) => n + u.relay.tunnels(`127.0.0.1:${site.port}`), 0);
      const before = tunnels();
      const seen = site.seen.length;
      const server = listener === 'HTTP' ? rota.httpProxy : `socks5://${rota.socksAddr}`;
      const v = await browser.visit({ server }, `${site.origin}/`);
      assert.deepEqual(v.problems, []);
      assert.equal(v.status, 200);
      assert.equal(v.heading, 'Loaded through the proxy');
      assert.equal(v.result, site.token, 'the script ran and its fetch came back');
      assert.deepEqual(site.seen.slice(seen), ['/', '/app.js', '/data.json']);
      assert.ok(tunnels() > before, 'the page came through an upstream of the pool');
      for (const u of ups) assert.deepEqual(u.relay.refused, []);
    });
  }
});
