import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import {
  basic,
  connectVia,
  type ListeningApp,
  listeningApp,
  readAll,
  viaProxy,
  waitFor,
} from './helpers/forward.ts';

/*
 * Hostile input at both listeners: random bytes, truncated and oversized heads, heads that never end,
 * and auth refusals. Each must get a clear answer (or a close) and free everything: the proof is the
 * process's own open file descriptors, back to where they were.
 */

const KEY = 'hostile-test-key-abcdef';
let t: ListeningApp;

const fds = () => readdirSync('/proc/self/fd').length;

before(async () => {
  // Auth on, a generous refusal limit: the fuzzing exercises parsers, the limit has its own test.
  t = await listeningApp({ ROTA_REQUIRE_AUTH: 'true', ROTA_API_KEY: KEY, ROTA_RATE_LIMIT: '1000000/minute' });
});
after(() => t.close());

/** Writes `bytes`, half-closes, and waits for the server to close (or 3 s). */
function throwAt(port: number, bytes: Uint8Array): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    let text = '';
    const timer = setTimeout(() => {
      s.destroy();
      resolve(`${text}<timeout>`);
    }, 3_000);
    s.on('data', (c: Buffer) => {
      text += c.toString('latin1');
    });
    s.on('error', () => {});
    s.once('close', () => {
      clearTimeout(timer);
      resolve(text);
    });
    s.end(bytes);
  });
}

const PREFIXES = [
  '',
  'CONNECT ',
  'GET http://',
  'GET / HTTP/1.1\r\n',
  '\u0005\u0001\u0000',
  '\u0005\u0002\u0000\u0002',
];

const hostileBytes = fc
  .tuple(fc.constantFrom(...PREFIXES), fc.uint8Array({ maxLength: 700 }))
  .map(([p, rest]) => new Uint8Array([...Buffer.from(p, 'latin1'), ...rest]));

describe('random bytes (fast-check)', () => {
  test('the HTTP and SOCKS5 listeners never crash, always close, and leak no descriptor', async () => {
    const baseline = fds();
    await fc.assert(
      fc.asyncProperty(hostileBytes, fc.boolean(), async (bytes, socks) => {
        const answer = await throwAt(socks ? t.socksPort : t.httpPort, bytes);
        assert.ok(
          !answer.endsWith('<timeout>'),
          `connection left open: ${JSON.stringify(answer.slice(0, 80))}`,
        );
        if (!socks && answer !== '') assert.match(answer, /^HTTP\/1\.1 \d{3} /);
      }),
      { numRuns: 300 },
    );
    await waitFor(() => fds() <= baseline, 5_000);
    const health = await t.app.inject({ url: '/api/v1/health' });
    assert.equal(health.statusCode, 200, 'still serving');
  });
});

describe('heads', () => {
  test('an oversized head is 431 with X-Rota-Error, and the connection closes', async () => {
    const head = `GET http://127.0.0.1/ HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`;
    const answer = await throwAt(t.httpPort, Buffer.from(head));
    assert.match(answer, /^HTTP\/1\.1 431 /);
    assert.match(answer, /X-Rota-Error: REQUEST_HEADERS_TOO_LARGE/);
  });

  test('a head that never completes is 408 within seconds; a SOCKS5 handshake that stalls is closed', async () => {
    const baseline = fds();
    const slow = net.connect({ host: '127.0.0.1', port: t.httpPort });
    slow.write('GET http://127.0.0.1/ HTTP/1.1\r\nHost: x\r\n');
    const stalled = net.connect({ host: '127.0.0.1', port: t.socksPort });
    stalled.write(Buffer.from([5, 1]));
    const started = Date.now();
    const [httpAnswer, socksAnswer] = await Promise.all([readAll(slow), readAll(stalled)]);
    assert.match(httpAnswer, /^HTTP\/1\.1 408 /);
    assert.equal(socksAnswer, '');
    assert.ok(Date.now() - started < 15_000, `${Date.now() - started} ms`);
    await waitFor(() => fds() <= baseline);
  });
});

describe('auth on the HTTP listener', () => {
  test('no credentials or a wrong key: 407 with Proxy-Authenticate; the key passes (and reaches the pool)', async () => {
    const none = await viaProxy(t.httpPort, 'http://127.0.0.1:9/');
    assert.equal(none.status, 407);
    assert.equal(none.headers['proxy-authenticate'], 'Basic realm="rota"');
    assert.equal(none.headers['x-rota-error'], 'PROXY_AUTH_REQUIRED');
    const wrong = await connectVia(t.httpPort, '127.0.0.1:9', { 'Proxy-Authorization': basic('u', 'wrong') });
    assert.equal(wrong.status, 407);
    wrong.socket.destroy();
    // 407 comes before 400: a stranger learns nothing about parameters.
    const strangerParams = await viaProxy(t.httpPort, 'http://127.0.0.1:9/', {
      headers: { 'proxy-authorization': basic('u-bogus-1', 'wrong') },
    });
    assert.equal(strangerParams.status, 407);
    const right = await viaProxy(t.httpPort, 'http://127.0.0.1:9/', {
      headers: { 'proxy-authorization': basic('anyone', KEY) },
    });
    assert.equal(right.status, 503, 'past the door: the (empty) pool answers');
    assert.equal(right.headers['x-rota-error'], 'PROXY_POOL_EMPTY');
    assert.ok(t.logs.some((l) => l.includes('listener.auth_failed') && l.includes('listener:http')));
    assert.ok(!t.logs.some((l) => l.includes('wrong')), 'no password in any log line');
  });

  test('past the failed-auth budget the listener answers 429 at once, right key or not', async () => {
    const a = await listeningApp({
      ROTA_REQUIRE_AUTH: 'true',
      ROTA_API_KEY: KEY,
      ROTA_AUTH_FAILURE_LIMIT: '3/minute',
    });
    try {
      for (let i = 0; i < 3; i++) {
        const r = await viaProxy(a.httpPort, 'http://127.0.0.1:9/', {
          headers: { 'proxy-authorization': basic('u', `x${i}`) },
        });
        assert.equal(r.status, 407);
      }
      const r = await viaProxy(a.httpPort, 'http://127.0.0.1:9/', {
        headers: { 'proxy-authorization': basic('u', KEY) },
      });
      assert.equal(r.status, 429);
      assert.equal(r.headers['x-rota-error'], 'RATE_LIMIT_EXCEEDED');
      assert.match(String(r.headers['retry-after']), /^\d+$/);
    } finally {
      await a.close();
    }
  });
});
