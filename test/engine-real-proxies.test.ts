import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { testTls } from './fixtures/certs.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import type { TestApp } from './helpers/app.ts';
import {
  addProxy,
  deleteProxy,
  engineApp,
  getProxy,
  NO_BACKOFF,
  proxied,
  proxiedOk,
  putPolicy,
} from './helpers/engine.ts';
import {
  closedPort,
  type RealProxy,
  startAllOrClose,
  startDante,
  startTinyproxy,
} from './helpers/real-proxies.ts';

/*
 * The engine through real third-party proxies added via the API: tinyproxy (HTTP, Basic auth) and
 * dante (SOCKS5, with and without username auth), to plain-http and https targets.
 */

const TINY_USER = 'tiny';
const TINY_SECRET = 'Tiny-pw-4417';

let http: TargetServer;
let https: TargetServer;
let tinyproxy: RealProxy;
let dante: RealProxy;
let danteAuth: RealProxy;
let t: TestApp;

before(async () => {
  const tls = await testTls();
  [http, https, tinyproxy, dante, danteAuth] = await startAllOrClose([
    startTarget(),
    startTarget({ tls }),
    startTinyproxy({ auth: { username: TINY_USER, password: TINY_SECRET } }),
    startDante(),
    startDante({ auth: true }),
  ]);
  t = await engineApp({ ROTA_MAX_RETRIES: '1' }, { upstreamTls: { ca: tls.ca } });
  await putPolicy(t, NO_BACKOFF);
});

after(async () => {
  await t?.close();
  // Unset when `before` failed: startAllOrClose has closed what it started.
  await Promise.all([http, https, tinyproxy, dante, danteAuth].map((f) => f?.close()));
});

/** Each proxy alone in the pool, so that the call certainly goes through it. */
async function alone(proxy: Record<string, unknown>, run: (id: string) => Promise<void>): Promise<void> {
  const id = await addProxy(t, proxy);
  try {
    await run(id);
  } finally {
    assert.equal((await deleteProxy(t, id)).statusCode, 204);
  }
}

async function roundTrip(id: string, publicUrl: string): Promise<void> {
  for (const target of [http, https]) {
    const get = await proxiedOk(t, { url: target.url('/echo?via=real').href, headers: { 'x-probe': 'p' } });
    assert.equal(get.status_code, 200, target.origin);
    const echo = JSON.parse(get.body);
    assert.equal(echo.path, '/echo?via=real');
    assert.equal(echo.headers['x-probe'], 'p');
    assert.equal(echo.headers['proxy-authorization'], undefined, 'credentials stop at the proxy');
    assert.deepEqual([get.proxy_used, get.proxy_id], [publicUrl, id]);
    const post = await proxiedOk(t, { url: target.url('/echo').href, method: 'POST', body: 'über' });
    assert.equal(JSON.parse(post.body).body, 'über');
  }
  const p = await getProxy(t, id);
  assert.deepEqual([p.stats.total_requests, p.stats.successful_requests, p.health], [4, 4, 'healthy']);
}

describe('through real proxies', () => {
  test('tinyproxy with Basic auth (credentials in the URL)', async () => {
    const url = `http://127.0.0.1:${tinyproxy.port}`;
    await alone({ url: `http://${TINY_USER}:${TINY_SECRET}@127.0.0.1:${tinyproxy.port}` }, (id) =>
      roundTrip(id, url),
    );
  });

  test('dante SOCKS5 without auth, as socks5 and socks5h', async () => {
    for (const scheme of ['socks5', 'socks5h']) {
      const url = `${scheme}://127.0.0.1:${dante.port}`;
      await alone({ url }, (id) => roundTrip(id, url));
    }
  });

  test('dante SOCKS5 with username auth (credentials as fields)', async () => {
    const url = `socks5://127.0.0.1:${danteAuth.port}`;
    const creds = { username: danteAuth.username, password: danteAuth.password };
    await alone({ url, ...creds }, (id) => roundTrip(id, url));
  });

  test('wrong credentials are a proxy fault, reported without the password', async () => {
    const wrong = 'Not-the-password-1';
    for (const url of [`http://127.0.0.1:${tinyproxy.port}`, `socks5://127.0.0.1:${danteAuth.port}`]) {
      await alone({ url, username: TINY_USER, password: wrong }, async (id) => {
        const res = await proxied(t, { url: https.url('/json').href });
        assert.equal(res.statusCode, 502, res.body);
        const err = res.json().error;
        assert.equal(err.code, 'PROXY_FAILOVER_EXHAUSTED');
        assert.equal(err.details.attempts[0].kind, 'proxy_auth');
        assert.ok(!res.body.includes(wrong));
        assert.equal((await getProxy(t, id)).health, 'degraded');
      });
    }
    assert.ok(!t.logs.join('\n').includes(wrong));
  });
});

describe('a target the real proxy cannot reach', () => {
  const tiny = () => ({
    url: `http://127.0.0.1:${tinyproxy.port}`,
    username: TINY_USER,
    password: TINY_SECRET,
  });

  async function unreachable(proxy: Record<string, unknown>, schemes: string[]): Promise<void> {
    const closed = await closedPort();
    await alone(proxy, async (id) => {
      for (const scheme of schemes) {
        const res = await proxied(t, { url: `${scheme}://127.0.0.1:${closed}/` });
        assert.equal(res.statusCode, 504, `${scheme}: ${res.body}`);
        assert.equal(res.json().error.code, 'TARGET_UNREACHABLE', scheme);
      }
      const p = await getProxy(t, id);
      // Not the proxy's fault: its health is untouched (a new proxy's stays unknown), nothing failed.
      assert.deepEqual([p.health, p.stats.failed_requests], ['unknown', 0], "not the proxy's fault");
    });
  }

  test('dante: 504 TARGET_UNREACHABLE for http and https, the proxy unharmed', async () => {
    await unreachable({ url: `socks5://127.0.0.1:${dante.port}` }, ['http', 'https']);
  });

  test('tinyproxy, CONNECT answered 500: 504 TARGET_UNREACHABLE, the proxy unharmed', async () => {
    await unreachable(tiny(), ['https']);
  });

  // tinyproxy answers an absolute-URI request it cannot forward with its own "500 Unable to connect"
  // page; src/upstream/http-proxy.ts recognises the proxy's own page and reports target_unreachable.
  test('tinyproxy, absolute-URI request answered 500: 504 TARGET_UNREACHABLE', async () => {
    await unreachable(tiny(), ['http']);
  });
});
