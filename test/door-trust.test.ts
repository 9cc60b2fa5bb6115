import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { addUpstream, type ListeningApp, listeningApp, viaProxy } from './helpers/forward.ts';

/*
 * What a client can trust at both doors (the HTTP listener, the API port): a request line that is not
 * HTTP/1.0 or HTTP/1.1 is refused with nothing sent on, and every X-Rota-* header it reads is Rota's,
 * never one a target or an upstream proxy sent. The target and the upstream proxy forge X-Rota-* headers
 * on every answer; the target counts what reaches it.
 */

let target: http.Server;
let targetUrl: string;
let reached = 0;
let upstream: http.Server;
let upstreamSeen = 0;
let t: ListeningApp;
let apiPort: number;
let proxyId: string;

async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

before(async () => {
  target = http.createServer((req, res) => {
    reached++;
    req.resume();
    res.writeHead(200, {
      'content-type': 'text/plain',
      'X-Rota-Error': 'FAKE',
      'X-Rota-Proxy-Id': 'evil',
      'x-rota-session': 'from-target',
    });
    res.end('hello');
  });
  targetUrl = `http://127.0.0.1:${await listen(target)}/page`;
  // A forward proxy that adds headers of its own to every answer it carries.
  upstream = http.createServer((req, res) => {
    upstreamSeen++;
    const out = http.request(
      req.url ?? '',
      { method: req.method, headers: req.headers, agent: false },
      (a) => {
        res.writeHead(a.statusCode ?? 502, {
          ...a.headers,
          'X-Rota-Error': 'FAKE-PROXY',
          'X-Rota-Hop': 'proxy',
        });
        a.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  const upstreamPort = await listen(upstream);
  t = await listeningApp();
  proxyId = await addUpstream(t, { url: `http://127.0.0.1:${upstreamPort}` });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  apiPort = (t.app.server.address() as AddressInfo).port;
});

after(async () => {
  await t.close();
  upstream.closeAllConnections();
  target.closeAllConnections();
  await Promise.all([new Promise((r) => upstream.close(r)), new Promise((r) => target.close(r))]);
});

/** Writes `text` on a fresh connection and reads until the server closes it (or 3 s). */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    let got = '';
    const timer = setTimeout(() => {
      s.destroy();
      resolve(`${got}<timeout>`);
    }, 3_000);
    s.on('data', (c: Buffer) => {
      got += c.toString('latin1');
    });
    s.on('error', () => {});
    s.once('close', () => {
      clearTimeout(timer);
      resolve(got);
    });
    s.write(text);
  });
}

function rotaHeaders(headers: Record<string, unknown>): string[] {
  return Object.keys(headers).filter((k) => k.toLowerCase().startsWith('x-rota-'));
}

describe('request lines that are not HTTP/1.0 or HTTP/1.1', () => {
  test('the HTTP listener refuses them with X-Rota-Error, and nothing reaches the upstream or target', async () => {
    const before = { reached, upstreamSeen };
    const host = new URL(targetUrl).host;
    const body = 'Content-Type: text/plain\r\nContent-Length: 3\r\n\r\nabc';
    const cases: [string, number][] = [
      [`GET ${targetUrl} \r\nHost: ${host}\r\n\r\n`, 400],
      [`GET ${targetUrl}\r\nHost: ${host}\r\n\r\n`, 505],
      [`POST ${targetUrl}\r\nHost: ${host}\r\n${body}`, 505],
      [`GET ${targetUrl} HTTP/2.0\r\nHost: ${host}\r\n\r\n`, 505],
      [`POST ${targetUrl} HTTP/2.0\r\nHost: ${host}\r\n${body}`, 505],
      [`GET ${targetUrl} HTTP/0.9\r\nHost: ${host}\r\n\r\n`, 505],
      [`CONNECT ${host} HTTP/2.0\r\nHost: ${host}\r\n\r\n`, 505],
      [`CONNECT ${host}\r\nHost: ${host}\r\n\r\n`, 505],
    ];
    for (const [line, status] of cases) {
      const answer = await raw(t.httpPort, line);
      assert.match(answer, new RegExp(`^HTTP/1\\.1 ${status} `), JSON.stringify(line));
      const code = status === 505 ? 'HTTP_VERSION_NOT_SUPPORTED' : 'BAD_REQUEST';
      assert.match(answer, new RegExp(`\r\nx-rota-error: ${code}\r\n`, 'i'), JSON.stringify(line));
      assert.doesNotMatch(answer, /x-rota-proxy-id/i);
      assert.doesNotMatch(answer, /<timeout>$/, 'the connection closes');
    }
    assert.deepEqual({ reached, upstreamSeen }, before);
    // HTTP/1.0 still passes.
    const ok = await raw(t.httpPort, `GET ${targetUrl} HTTP/1.0\r\nHost: ${host}\r\n\r\n`);
    assert.match(ok, /^HTTP\/1\.1 200 /);
    assert.equal(reached, before.reached + 1);
  });

  test('the API port refuses them in the envelope, and POST request sends nothing on', async () => {
    const before = { reached, upstreamSeen };
    const json = JSON.stringify({ url: targetUrl, method: 'GET' });
    const head = `Host: 127.0.0.1:${apiPort}\r\nContent-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n`;
    const cases: [string, number][] = [
      [`POST /api/v1/request \r\n${head}${json}`, 400],
      [`POST /api/v1/request\r\n${head}${json}`, 505],
      [`POST /api/v1/request HTTP/2.0\r\n${head}${json}`, 505],
      [`GET /api/v1/proxies HTTP/2.0\r\nHost: 127.0.0.1:${apiPort}\r\n\r\n`, 505],
    ];
    for (const [line, status] of cases) {
      const answer = await raw(apiPort, line);
      assert.match(answer, new RegExp(`^HTTP/1\\.1 ${status} `), JSON.stringify(line));
      const envelope = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as {
        status: string;
        error: { code: string };
      };
      assert.equal(envelope.status, 'error');
      assert.equal(envelope.error.code, status === 505 ? 'HTTP_VERSION_NOT_SUPPORTED' : 'BAD_REQUEST');
      assert.doesNotMatch(answer, /<timeout>$/, 'the connection closes');
    }
    assert.deepEqual({ reached, upstreamSeen }, before);
    const ok = await raw(apiPort, `POST /api/v1/request HTTP/1.1\r\nConnection: close\r\n${head}${json}`);
    assert.match(ok, /^HTTP\/1\.1 200 /);
    assert.equal(reached, before.reached + 1);
  });
});

describe('X-Rota-* from a target or an upstream proxy', () => {
  test("never reach a client of the HTTP listener: it reads Rota's own X-Rota-Proxy-Id and X-Rota-Attempts only", async () => {
    const r = await viaProxy(t.httpPort, targetUrl);
    assert.equal(r.status, 200);
    assert.equal(r.body.toString(), 'hello');
    assert.equal(r.headers['x-rota-proxy-id'], proxyId);
    assert.equal(r.headers['x-rota-attempts'], '1');
    assert.equal(r.headers['x-rota-error'], undefined);
    // No session and no policy rule: Rota adds neither X-Rota-Session nor X-Rota-Policy.
    assert.deepEqual(rotaHeaders(r.headers), ['x-rota-proxy-id', 'x-rota-attempts']);
  });

  test("never appear in POST request's answer, its headers or the target's headers it reports", async () => {
    const res = await fetch(`http://127.0.0.1:${apiPort}/api/v1/request`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: targetUrl, method: 'GET' }),
    });
    assert.equal(res.status, 200);
    assert.deepEqual(rotaHeaders(Object.fromEntries(res.headers)), []);
    const { data } = (await res.json()) as {
      data: { status_code: number; headers: Record<string, unknown>; body: string; proxy_id: string };
    };
    assert.equal(data.status_code, 200);
    assert.equal(data.body, 'hello');
    assert.equal(data.proxy_id, proxyId);
    assert.deepEqual(rotaHeaders(data.headers), []);
    assert.equal(data.headers['content-type'], 'text/plain');
  });
});
