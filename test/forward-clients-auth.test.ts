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
import { type CurlResult, curl, echoPath, pythonGet } from './helpers/forward-clients.ts';
import { behindRelay, type RotaGateway, startRotaGateway, type Upstream } from './helpers/forward-rota.ts';
import { startAllOrClose, startSquid } from './helpers/real-proxies.ts';
import { type Relay, startRelay } from './helpers/relay.ts';

/*
 * Rota's listeners with ROTA_REQUIRE_AUTH=true, driven by real clients: the API key is the proxy
 * password (any username, which still carries the routing parameters). A refused client never reaches
 * the upstream (squid behind a counting relay), on the HTTP listener and on SOCKS5.
 */

const KEY = 'forward-clients-auth-key-0123456789abcdef';

let tls: TlsMaterial;
let http: TargetServer;
let https: TargetServer;
let rota: RotaGateway;
let squid: Upstream;
let id: string;
let site: Site;
let browser: ProxiedBrowser;
/** In front of Rota's HTTP listener: what the clients sent it. */
let front: Relay;

before(async () => {
  tls = await testTls();
  const [h, s, r, sq, st, b] = await startAllOrClose([
    startTarget(),
    startTarget({ tls }),
    startRotaGateway({ ROTA_REQUIRE_AUTH: 'true', ROTA_API_KEY: KEY }, KEY),
    startSquid(),
    startSite(tls),
    launchProxiedBrowser(),
  ]);
  [http, https, rota, site, browser] = [h, s, r, st, b];
  squid = await behindRelay('squid', 'http', sq);
  front = await startRelay(rota.httpPort);
  id = await rota.addProxy(squid.body());
});

after(async () => {
  await browser?.close();
  await rota?.close();
  await Promise.all([http, https, squid, site, front].map((f) => f?.close()));
});

function assert407(r: CurlResult, what: string): void {
  assert.equal(r.status, 407, what);
  assert.equal(r.headers['proxy-authenticate'], 'Basic realm="rota"', what);
  assert.equal(r.headers['x-rota-error'], 'PROXY_AUTH_REQUIRED', what);
}

/** Runs `refused`, then checks the upstream saw nothing of it. */
async function neverReachesUpstream(refused: () => Promise<void>): Promise<void> {
  const seen = squid.relay.lines.length;
  await refused();
  assert.deepEqual(squid.relay.lines.slice(seen), [], 'a refused client never reaches the upstream');
}

describe('HTTP listener with ROTA_REQUIRE_AUTH', () => {
  it('absolute URI: 407 without credentials or with a wrong key; the key as password works', async () => {
    const url = http.url('/echo?auth=abs').href;
    await neverReachesUpstream(async () => {
      assert407(await curl(url, { proxy: rota.httpProxy }), 'no credentials');
      assert407(await curl(url, { proxy: rota.httpProxy, proxyUser: 'any:wrong-key' }), 'wrong key');
      assert407(await curl(url, { proxy: rota.httpProxy, proxyUser: `${KEY}:` }), 'key as username');
    });
    const good = await curl(url, { proxy: rota.httpProxy, proxyUser: `any:${KEY}` });
    assert.equal(good.code, 0, good.stderr);
    assert.equal(good.status, 200);
    assert.equal(good.headers['x-rota-proxy-id'], id);
    assert.equal(echoPath(good), '/echo?auth=abs');
    assert.equal(good.headers['proxy-authenticate'], undefined);
    assert.equal(squid.relay.count('/echo?auth=abs '), 1);
  });

  it('CONNECT: 407 with a wrong key (curl exit 56), a tunnel with the right one', async () => {
    const url = https.url('/echo?auth=connect').href;
    await neverReachesUpstream(async () => {
      const bad = await curl(url, { proxy: rota.httpProxy, proxyUser: 'any:wrong-key', ca: tls.ca });
      assert.equal(bad.code, 56, bad.stderr);
      assert.equal(bad.blocks.length, 1, 'no tunnel, no second answer');
      assert407(bad, 'CONNECT with a wrong key');
    });
    const good = await curl(url, { proxy: rota.httpProxy, proxyUser: `shop-session-a1:${KEY}`, ca: tls.ca });
    assert.equal(good.code, 0, good.stderr);
    assert.deepEqual(
      good.blocks.map((b) => b.status),
      [200, 200],
    );
    assert.equal(good.blocks[0]?.headers['x-rota-proxy-id'], id);
    assert.equal(echoPath(good), '/echo?auth=connect');
  });

  it('the username still carries parameters: an invalid one is 400 once the key is right, 407 before', async () => {
    const url = http.url('/json').href;
    const wrong = await curl(url, { proxy: rota.httpProxy, proxyUser: 'shop-country-zz:wrong-key' });
    assert407(wrong, 'auth is checked before parameters');
    const bad = await curl(url, { proxy: rota.httpProxy, proxyUser: `shop-country-zz:${KEY}` });
    assert.equal(bad.status, 400);
    assert.equal(bad.headers['x-rota-error'], 'INVALID_PROXY_PARAMS');
  });

  it('Python requests: the key in the proxy URL works for http and https; a wrong one gets 407', async () => {
    const proxy = `http://scraper:${KEY}@127.0.0.1:${rota.httpPort}`;
    const plain = await pythonGet(http.url('/echo?auth=py').href, { proxy });
    assert.deepEqual([plain.error, plain.status, echoPath(plain)], [null, 200, '/echo?auth=py']);
    assert.equal(plain.headers['x-rota-proxy-id'], id);
    const tlsd = await pythonGet(https.url('/echo?auth=py-tls').href, { proxy, ca: tls.ca });
    assert.deepEqual([tlsd.error, tlsd.status, echoPath(tlsd)], [null, 200, '/echo?auth=py-tls']);
    const wrong = `http://scraper:nope@127.0.0.1:${rota.httpPort}`;
    await neverReachesUpstream(async () => {
      const bad = await pythonGet(http.url('/json').href, { proxy: wrong });
      assert.equal(bad.status, 407);
      assert.equal(bad.headers['x-rota-error'], 'PROXY_AUTH_REQUIRED');
      const badTunnel = await pythonGet(https.url('/json').href, { proxy: wrong, ca: tls.ca });
      assert.match(badTunnel.error ?? '', /^ProxyError: .*407/);
    });
  });
});

describe('SOCKS5 listener with ROTA_REQUIRE_AUTH', () => {
  it('refuses no credentials and a wrong key (curl exit 97); the key as password works', async () => {
    const url = http.url('/echo?auth=socks').href;
    await neverReachesUpstream(async () => {
      const none = await curl(url, { socks5Hostname: rota.socksAddr });
      assert.equal(none.code, 97, `no acceptable method: ${none.stderr}`);
      const bad = await curl(url, { socks5Hostname: rota.socksAddr, proxyUser: 'any:wrong-key' });
      assert.equal(bad.code, 97, `user/pass refused: ${bad.stderr}`);
    });
    const good = await curl(url, { socks5Hostname: rota.socksAddr, proxyUser: `any:${KEY}` });
    assert.equal(good.code, 0, good.stderr);
    assert.equal(echoPath(good), '/echo?auth=socks');
    assert.equal(squid.relay.count('/echo?auth=socks '), 1, 'through the pool');
    const inUrl = await curl(https.url('/echo?auth=socks-tls').href, {
      proxy: `socks5h://shop-session-s9:${KEY}@${rota.socksAddr}`,
      ca: tls.ca,
    });
    assert.equal(inUrl.code, 0, inUrl.stderr);
    assert.equal(echoPath(inUrl), '/echo?auth=socks-tls');
  });

  it('Python requests over socks5h:// with the key works; a wrong key raises', async () => {
    const good = await pythonGet(https.url('/echo?auth=py-socks').href, {
      proxy: `socks5h://py:${KEY}@${rota.socksAddr}`,
      ca: tls.ca,
    });
    assert.deepEqual([good.error, good.status, echoPath(good)], [null, 200, '/echo?auth=py-socks']);
    await neverReachesUpstream(async () => {
      const bad = await pythonGet(http.url('/json').href, { proxy: `socks5h://py:nope@${rota.socksAddr}` });
      assert.equal(bad.status, 0);
      assert.match(bad.error ?? '', /ConnectionError|ProxyError|SOCKS/i);
    });
  });
});

describe('clients that wait for the challenge', () => {
  it('curl --proxy-anyauth: sends nothing, gets 407 with Basic realm="rota", retries with the key', async () => {
    const r = await curl(http.url('/echo?auth=anyauth').href, {
      proxy: rota.httpProxy,
      proxyUser: `any:${KEY}`,
      extraArgs: ['--proxy-anyauth'],
    });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      r.blocks.map((b) => b.status),
      [407, 200],
    );
    assert.equal(r.blocks[0]?.headers['proxy-authenticate'], 'Basic realm="rota"');
    assert.equal(echoPath(r), '/echo?auth=anyauth');
  });

  it('headless Chromium answers the 407 on CONNECT with the key and loads an https page', async () => {
    const authority = `127.0.0.1:${site.port}`;
    const asked = front.tunnels(authority);
    const v = await browser.visit(
      { server: front.server, username: 'browser', password: KEY },
      `${site.origin}/`,
    );
    assert.deepEqual(v.problems, []);
    assert.equal(v.status, 200);
    assert.equal(v.result, site.token, 'the script ran and its fetch came back');
    assert.ok(
      front.tunnels(authority) - asked >= 2,
      `CONNECT, 407, CONNECT again: ${front.lines.join('\n')}`,
    );
    assert.ok(squid.relay.tunnels(authority) >= 1, 'the page came through the pool');
    const wrong = await browser.visit(
      { server: front.server, username: 'browser', password: 'nope' },
      `${site.origin}/`,
    );
    assert.notEqual(wrong.status, 200, 'a wrong key loads nothing');
    assert.equal(wrong.result, '');
  });
});
