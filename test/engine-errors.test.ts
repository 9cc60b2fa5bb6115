import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { makeApp, type TestApp } from './helpers/app.ts';
import {
  addProxy,
  breakerState,
  deleteProxy,
  engineApp,
  NO_BACKOFF,
  proxied,
  putPolicy,
} from './helpers/engine.ts';
import { closedPort } from './helpers/real-proxies.ts';

/* The error answers of POST /api/v1/request, each produced by a real situation. */

let target: TargetServer;
let live: ForwardProxy;

before(async () => {
  [target, live] = await Promise.all([startTarget(), startForwardProxy()]);
});
after(async () => {
  await Promise.all([target.close(), live.close()]);
});

describe('pool and failover errors', () => {
  let t: TestApp;
  before(async () => {
    t = await engineApp({ ROTA_BREAKER_FAILURE_THRESHOLD: '1', ROTA_BREAKER_TIMEOUT_S: '30' });
    await putPolicy(t, NO_BACKOFF);
  });
  after(async () => t.close());

  test('an empty pool is 503 PROXY_POOL_EMPTY', async () => {
    const res = await proxied(t, { url: target.url('/json').href });
    assert.equal(res.statusCode, 503);
    assert.equal(res.json().error.code, 'PROXY_POOL_EMPTY');
    assert.equal(res.headers['retry-after'], undefined, 'nothing to wait for');
  });

  test('every proxy failing is 502 PROXY_FAILOVER_EXHAUSTED, listing each attempt', async () => {
    const ports = [await closedPort(), await closedPort()];
    const ids = [
      await addProxy(t, `http://127.0.0.1:${ports[0]}`),
      await addProxy(t, `socks5://127.0.0.1:${ports[1]}`),
    ];
    const res = await proxied(t, { url: target.url('/json').href });
    assert.equal(res.statusCode, 502, res.body);
    const err = res.json().error;
    assert.equal(err.code, 'PROXY_FAILOVER_EXHAUSTED');
    assert.deepEqual(
      err.details.attempts.map((a: { proxy_id: string; kind: string }) => [a.proxy_id, a.kind]),
      [
        [ids[0], 'connect'],
        [ids[1], 'connect'],
      ],
    );
    for (const id of ids) assert.equal(await breakerState(t, id), 'open', 'threshold 1');
  });

  test('with every breaker open it is 503 PROXY_POOL_EMPTY at once, with Retry-After', async () => {
    const started = performance.now();
    const res = await proxied(t, { url: target.url('/json').href });
    assert.equal(res.statusCode, 503);
    assert.equal(res.json().error.code, 'PROXY_POOL_EMPTY');
    const retryAfter = Number(res.headers['retry-after']);
    assert.ok(retryAfter >= 29 && retryAfter <= 30, String(res.headers['retry-after']));
    assert.equal(res.json().error.details.retry_after_s, retryAfter);
    assert.ok(performance.now() - started < 1_000, 'no proxy was tried');
  });

  test('GET rotate says the same, and a live proxy added later is used at once', async () => {
    const rotate = await t.app.inject({ method: 'GET', url: '/api/v1/rotate' });
    assert.equal(rotate.statusCode, 503);
    assert.equal(rotate.json().error.code, 'PROXY_POOL_EMPTY');
    assert.ok(Number(rotate.headers['retry-after']) >= 29, 'rotate answers like a request would');
    const id = await addProxy(t, `http://127.0.0.1:${live.port}`);
    const res = await proxied(t, { url: target.url('/json').href });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().data.proxy_id, id);
    assert.equal((await deleteProxy(t, id)).statusCode, 204);
  });
});

describe('target URL checks', () => {
  let t: TestApp;
  before(async () => {
    // No ROTA_SSRF_ALLOW here: the default rules.
    t = await makeApp({ ROTA_CONNECT_TIMEOUT_S: '0.5' });
    await addProxy(t, `http://127.0.0.1:${live.port}`);
  });
  after(async () => t.close());

  test('SSRF targets are 400 INVALID_URL with details.reason, and nothing is sent', async () => {
    const before = live.requests.length;
    const cases: [string, string][] = [
      ['http://10.0.0.1/', 'private'],
      ['http://192.168.1.10:8080/x', 'private'],
      ['http://localhost/', 'loopback'],
      [target.url('/json').href, 'loopback'],
      ['http://[::1]/', 'loopback'],
      ['http://169.254.169.254/latest/meta-data', 'link_local'],
      ['http://db.internal/', 'internal_domain'],
      ['http://printer.local/', 'internal_domain'],
      ['file:///etc/passwd', 'scheme'],
      ['ftp://example.com/', 'scheme'],
    ];
    for (const [url, reason] of cases) {
      const res = await proxied(t, { url });
      assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
      const err = res.json().error;
      assert.equal(err.code, 'INVALID_URL', url);
      assert.equal(err.details.reason, reason, url);
    }
    assert.equal(live.requests.length, before);
  });

  test('schema errors are 422 with the most specific code and FastAPI-style detail', async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ url: 'not a url' }, 'INVALID_URL', 'url'],
      [{ url: 'http://' }, 'INVALID_URL', 'url'],
      [{ url: 'http://example.com/', method: 'FETCH' }, 'INVALID_METHOD', 'method'],
      [{ url: 'http://example.com/', timeout: 0 }, 'INVALID_TIMEOUT', 'timeout'],
      [{ url: 'http://example.com/', timeout: 301 }, 'INVALID_TIMEOUT', 'timeout'],
    ];
    for (const [body, code, field] of cases) {
      const res = await proxied(t, body);
      assert.equal(res.statusCode, 422, `${JSON.stringify(body)}: ${res.body}`);
      const json = res.json();
      assert.equal(json.error.code, code, JSON.stringify(body));
      assert.ok(
        json.detail.some((d: { loc: string[] }) => d.loc.includes(field)),
        JSON.stringify(json.detail),
      );
    }
  });
});

describe('a request that cannot be sent as given', () => {
  test('a header value outside an RFC 9110 field value is refused up front (422), never tried through a proxy', async () => {
    const t = await engineApp({});
    try {
      await putPolicy(t, { max_attempts: 5, base_delay: 5, max_backoff_delay: 10, jitter: false });
      await addProxy(t, `http://127.0.0.1:${live.port}`);
      const seen = live.requests.length;
      const t0 = performance.now();
      for (const value of ['caf\u023a', 'a\u0001b', 'emoji \u{1F600}']) {
        const res = await proxied(t, { url: target.url('/json').href, headers: { 'x-odd': value } });
        assert.equal(res.statusCode, 422, res.body);
        assert.equal(res.json().error.code, 'VALIDATION_ERROR');
      }
      const latin1 = await proxied(t, {
        url: target.url('/json').href,
        headers: { 'x-ok': 'caf\u00e9\tok' },
      });
      assert.equal(latin1.statusCode, 200, 'obs-text and tab are field values');
      assert.ok(performance.now() - t0 < 2_000, 'no retry pause');
      assert.equal(live.requests.length, seen + 1, 'only the valid one reached the proxy');
    } finally {
      await t.close();
    }
  });
});
