import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { type Fixture, listen, SocketTracker, stop } from './fixtures/server.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import type { TestApp } from './helpers/app.ts';
import { addProxy, engineApp, NO_BACKOFF, proxied, proxiedOk, putPolicy } from './helpers/engine.ts';

/* What POST /api/v1/request does with methods, headers, bodies, redirects, size and time limits. */

const USER = 'alice';
const SECRET = 'pw-Very-Secret-991';
const MAX_RESPONSE = 2048;

/** Answers with exactly the bytes it received (octet-stream) and keeps the last body it saw. */
async function startByteEcho(): Promise<Fixture & { last: Buffer | null }> {
  let last: Buffer | null = null;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      last = Buffer.concat(chunks);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': last.length });
      res.end(last);
    });
  });
  const tracker = new SocketTracker(server);
  const port = await listen(server);
  return {
    port,
    get connections() {
      return tracker.connections;
    },
    get last() {
      return last;
    },
    close: () => stop(server, tracker),
  };
}

let target: TargetServer;
let bytes: Awaited<ReturnType<typeof startByteEcho>>;
let withAuth: ForwardProxy;
let plain: ForwardProxy;
let t: TestApp;

before(async () => {
  [target, bytes, withAuth, plain] = await Promise.all([
    startTarget(),
    startByteEcho(),
    startForwardProxy({ auth: { username: USER, password: SECRET } }),
    startForwardProxy(),
  ]);
  t = await engineApp({ ROTA_MAX_RESPONSE_BYTES: String(MAX_RESPONSE) });
  await putPolicy(t, NO_BACKOFF);
  // One with credentials in the URL, one with them as fields: both must work and neither may leak.
  await addProxy(t, `http://${USER}:${SECRET}@127.0.0.1:${withAuth.port}`);
  await addProxy(t, { url: `http://127.0.0.1:${plain.port}`, username: 'bob', password: SECRET });
});

after(async () => {
  await t.close();
  await Promise.all([target, bytes, withAuth, plain].map((f) => f.close()));
});

describe('methods, headers and bodies', () => {
  test('every method reaches the target as sent; HEAD has no body', async () => {
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      const d = await proxiedOk(t, { url: target.url('/echo?q=1').href, method });
      assert.equal(d.status_code, 200, method);
      const echo = JSON.parse(d.body);
      assert.deepEqual([echo.method, echo.path], [method, '/echo?q=1']);
    }
    const before = target.count('HEAD', '/json');
    const head = await proxiedOk(t, { url: target.url('/json').href, method: 'HEAD' });
    assert.deepEqual([head.status_code, head.body], [200, '']);
    assert.equal(head.headers['content-type'], 'application/json');
    assert.equal(target.count('HEAD', '/json') - before, 1);
  });

  test('caller headers are forwarded; Proxy-Authorization and hop-by-hop headers are not', async () => {
    const d = await proxiedOk(t, {
      url: target.url('/echo').href,
      headers: {
        'X-Custom': 'value 1',
        'User-Agent': 'engine-test',
        'Proxy-Authorization': 'Basic c3RvbGVuOmNyZWRz',
        Connection: 'x-listed',
        'X-Listed': 'dropped because Connection names it',
        'Keep-Alive': 'timeout=5',
        TE: 'trailers',
        Upgrade: 'websocket',
      },
    });
    const seen = JSON.parse(d.body).headers as Record<string, string>;
    assert.equal(seen['x-custom'], 'value 1');
    assert.equal(seen['user-agent'], 'engine-test');
    for (const h of ['proxy-authorization', 'x-listed', 'keep-alive', 'te', 'upgrade']) {
      assert.equal(seen[h], undefined, h);
    }
    assert.equal(seen.host, `127.0.0.1:${target.port}`);
  });

  test('a text body and a base64 body arrive byte-exact', async () => {
    const text = 'héllo wörld ✓ 日本\n';
    const a = await proxiedOk(t, { url: `http://127.0.0.1:${bytes.port}/`, method: 'POST', body: text });
    assert.deepEqual(bytes.last, Buffer.from(text, 'utf8'));
    assert.deepEqual([a.body_encoding, a.body], ['utf8', text]);

    const raw = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 0x7f, 0xc3, 0x28, 10, 13, 0]);
    const b = await proxiedOk(t, {
      url: `http://127.0.0.1:${bytes.port}/`,
      method: 'PUT',
      body: raw.toString('base64'),
      body_encoding: 'base64',
    });
    assert.deepEqual(bytes.last, raw);
    assert.equal(b.body_encoding, 'base64', 'the answer is not UTF-8');
    assert.deepEqual(Buffer.from(b.body, 'base64'), raw);
  });

  test('invalid base64 is a 422, and nothing is sent', async () => {
    const before = bytes.connections;
    const res = await proxied(t, {
      url: `http://127.0.0.1:${bytes.port}/`,
      method: 'POST',
      body: 'not base64!',
      body_encoding: 'base64',
    });
    assert.equal(res.statusCode, 422);
    assert.equal(bytes.connections, before);
  });
});

describe('answers and limits', () => {
  test('redirects are returned, not followed', async () => {
    const before = target.count('GET', '/json');
    const d = await proxiedOk(t, { url: target.url('/redirect').href });
    assert.equal(d.status_code, 302);
    assert.equal(d.headers.location, '/json');
    assert.equal(target.count('GET', '/json'), before);
  });

  test('a response over ROTA_MAX_RESPONSE_BYTES is 502 REQUEST_FAILED, declared or streamed', async () => {
    const okSize = await proxiedOk(t, { url: target.url(`/big?bytes=${MAX_RESPONSE}`).href });
    assert.equal(okSize.body.length, MAX_RESPONSE);
    for (const q of [`bytes=${MAX_RESPONSE + 1}`, `bytes=${MAX_RESPONSE * 4}&stream=1`]) {
      const before = target.count('GET', '/big');
      const res = await proxied(t, { url: target.url(`/big?${q}`).href });
      assert.equal(res.statusCode, 502, q);
      assert.equal(res.json().error.code, 'REQUEST_FAILED');
      assert.equal(target.count('GET', '/big') - before, 1, 'not retried: the target answered');
    }
  });

  test('the request timeout is a total deadline: a slow target is 504 REQUEST_TIMEOUT in about that time', async () => {
    const started = performance.now();
    const res = await proxied(t, { url: target.url('/slow?ms=3000').href, timeout: 1 });
    const took = performance.now() - started;
    assert.equal(res.statusCode, 504, res.body);
    assert.equal(res.json().error.code, 'REQUEST_TIMEOUT');
    assert.ok(took >= 900 && took < 2_500, `took ${took} ms`);
  });

  test('proxy_used is scheme://host:port; elapsed_ms and attempts are reported', async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const d = await proxiedOk(t, { url: target.url('/json').href });
      seen.add(d.proxy_used);
      assert.match(d.proxy_used, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.ok(typeof d.elapsed_ms === 'number' && d.elapsed_ms > 0);
      assert.equal(d.attempts, 1);
    }
    assert.deepEqual(
      [...seen].sort(),
      [`http://127.0.0.1:${withAuth.port}`, `http://127.0.0.1:${plain.port}`].sort(),
    );
    assert.ok(withAuth.requests.some((r) => r.proxyAuthorization?.startsWith('Basic ')));
  });

  test('no password appears in any response or log line', async () => {
    const token = Buffer.from(`${USER}:${SECRET}`).toString('base64');
    const bodies: string[] = [];
    for (const url of ['/api/v1/proxies', '/api/v1/rotate', '/api/v1/stats', '/metrics', '/api/v1/status']) {
      bodies.push((await t.app.inject({ method: 'GET', url })).body);
    }
    bodies.push((await proxied(t, { url: target.url('/echo').href })).body);
    // A refused credential (wrong password) must not echo it either.
    const wrong = `Wr0ng-${SECRET}`;
    await addProxy(t, { url: `http://127.0.0.1:${withAuth.port}`, username: 'carol', password: wrong });
    for (let i = 0; i < 3; i++) bodies.push((await proxied(t, { url: target.url('/json').href })).body);
    const all = [...bodies, ...t.logs].join('\n');
    assert.ok(all.includes('"proxy_used"'), 'the responses were really collected');
    for (const secret of [SECRET, wrong, token]) assert.ok(!all.includes(secret), secret);
    assert.ok(!/"proxy_used":"[^"]*@/.test(all));
  });
});
