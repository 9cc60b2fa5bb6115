import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import tls from 'node:tls';
import { testTls } from './fixtures/certs.ts';
import { type HeadTarget, startHeadTarget, startRelayProxy } from './fixtures/raw-heads.ts';
import type { Fixture } from './fixtures/server.ts';
import { startSocksFixture } from './fixtures/socks.ts';
import { addUpstream, type ListeningApp, listeningApp, readAll } from './helpers/forward.ts';
import { type RealProxy, startAllOrClose, startDante } from './helpers/real-proxies.ts';

/*
 * Header fidelity: the target sees the client's header names in the client's order and case, minus
 * hop-by-hop, Proxy-* and X-Rota-*, with Host where the client put it and no Connection the client did
 * not send; through each door (absolute-URI on the HTTP listener, POST /api/v1/request) and each kind
 * of upstream (an http proxy: absolute-form for http targets, CONNECT for https ones; SOCKS5 for both).
 * The target records the bytes of each head; the proxies relay bytes untouched.
 */

let plain: HeadTarget;
let secure: HeadTarget;
let relay: Fixture;
let socks: Fixture;
let dante: RealProxy;
let t: ListeningApp;

const UPSTREAMS = [
  { name: 'http proxy', country: 'US' },
  { name: 'socks5 (fixture)', country: 'DE' },
  { name: 'socks5 (dante)', country: 'FR' },
] as const;

before(async () => {
  const material = await testTls();
  [plain, secure, relay, socks, dante] = await startAllOrClose([
    startHeadTarget(),
    startHeadTarget(material),
    startRelayProxy(),
    startSocksFixture(),
    startDante(),
  ]);
  t = await listeningApp({}, { upstreamTls: { ca: material.ca } });
  await addUpstream(t, { url: `http://127.0.0.1:${relay.port}`, country: 'US' });
  await addUpstream(t, { url: `socks5://127.0.0.1:${socks.port}`, country: 'DE' });
  await addUpstream(t, { url: `socks5://127.0.0.1:${dante.port}`, country: 'FR' });
});

after(async () => {
  await t?.close();
  await Promise.all([plain, secure, relay, socks, dante].map((f) => f?.close()));
});

/** The header lines of a head, request line left out. */
function lines(head: string | undefined): string[] {
  return (head ?? '').split('\r\n').slice(1);
}

/** A whole answer is in: its head and as many body bytes as it announced. */
function complete(text: string): boolean {
  const end = text.indexOf('\r\n\r\n');
  const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text)?.[1] ?? 0);
  return end >= 0 && text.length >= end + 4 + length;
}

/** One absolute-URI request written byte for byte; resolves with the answer's text. */
async function absolute(url: string, headerLines: readonly string[]): Promise<string> {
  const socket = net.connect({ host: '127.0.0.1', port: t.httpPort });
  socket.write(`GET ${url} HTTP/1.1\r\n${headerLines.map((l) => `${l}\r\n`).join('')}\r\n`);
  const answer = await readAll(socket, complete);
  socket.destroy();
  return answer;
}

function targets(): { target: HeadTarget; url: (path: string) => string }[] {
  return [
    { target: plain, url: (p) => `http://127.0.0.1:${plain.port}${p}` },
    { target: secure, url: (p) => `https://127.0.0.1:${secure.port}${p}` },
  ];
}

test('absolute-URI door: names, order and case as the client sent them, Host in its place', async () => {
  for (const up of UPSTREAMS) {
    for (const { target, url } of targets()) {
      const host = new URL(url('/')).host;
      const sent = [
        'x-CUSTOM: a',
        'Accept-Language: b',
        `Host: ${host}`,
        'Proxy-Connection: keep-alive',
        `X-Rota-Country: ${up.country}`,
        'user-Agent: c',
        'Connection: keep-alive',
        'X-ROTA-SESSION: abc',
        'Keep-Alive: timeout=5',
      ];
      const before = target.heads.length;
      const answer = await absolute(url('/a?b=1'), sent);
      assert.match(answer, /^HTTP\/1\.1 200 /, `${up.name}: ${answer}`);
      const seen = target.heads.slice(before);
      assert.equal(seen.length, 1, up.name);
      const expected = ['x-CUSTOM: a', 'Accept-Language: b', `Host: ${host}`, 'user-Agent: c'];
      assert.deepEqual(lines(seen[0]), [...expected, 'Connection: keep-alive'], `${up.name} ${url('/')}`);
      assert.match(seen[0] ?? '', /^GET (http:\/\/[^/]+)?\/a\?b=1 HTTP\/1\.1\r\n/);
    }
  }
});

test('absolute-URI door: no Connection line when the client sent none, Host last when the client put it last', async () => {
  for (const up of UPSTREAMS) {
    for (const { target, url } of targets()) {
      const host = new URL(url('/')).host;
      const sent = ['User-Agent: c', 'x-custom: a', `X-Rota-Country: ${up.country}`, `host: ${host}`];
      const before = target.heads.length;
      await absolute(url('/'), sent);
      const head = target.heads[before];
      assert.deepEqual(lines(head), ['User-Agent: c', 'x-custom: a', `host: ${host}`], up.name);
    }
  }
});

test('absolute-URI door: names listed in Connection stay behind; a repeated header stays two lines', async () => {
  const host = `127.0.0.1:${plain.port}`;
  const before = plain.heads.length;
  await absolute(`http://${host}/`, [
    `Host: ${host}`,
    'X-Rota-Country: US',
    'Cookie: a=1',
    'X-Drop: gone',
    'Connection: X-Drop, keep-alive',
    'Cookie: b=2',
  ]);
  assert.deepEqual(lines(plain.heads[before]), [
    `Host: ${host}`,
    'Cookie: a=1',
    'Connection: keep-alive',
    'Cookie: b=2',
  ]);
});

test('POST /api/v1/request: the JSON headers in their order and case; Host keeps its place, not its value', async () => {
  for (const up of UPSTREAMS) {
    for (const { target, url } of targets()) {
      const before = target.heads.length;
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/request',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({
          url: url('/p'),
          method: 'POST',
          country: up.country,
          body: 'hi',
          headers: {
            'x-CUSTOM': 'a',
            'Proxy-Authorization': 'Basic eDp5',
            'Accept-Language': 'b',
            HOST: 'elsewhere.example',
            'X-Rota-Thing': '1',
            'user-Agent': 'c',
          },
        }),
      });
      assert.equal(res.statusCode, 200, `${up.name}: ${res.body}`);
      const host = new URL(url('/')).host;
      assert.deepEqual(
        lines(target.heads[before]),
        ['x-CUSTOM: a', 'Accept-Language: b', `HOST: ${host}`, 'user-Agent: c', 'content-length: 2'],
        `${up.name} ${url('/')}`,
      );
    }
  }
});

test('inspected HTTPS door: names, order and case as the client sent them inside the TLS connection', async () => {
  const ca = await t.services.inspection.authority.caPem();
  for (const up of UPSTREAMS) {
    const authority = `127.0.0.1:${secure.port}`;
    const socket = net.connect({ host: '127.0.0.1', port: t.httpPort });
    socket.write(
      `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n` +
        `Proxy-Authorization: Basic ${Buffer.from('scraper-inspect-on:').toString('base64')}\r\n\r\n`,
    );
    const head = await readAll(socket, (s) => s.includes('\r\n\r\n'));
    assert.match(head, /^HTTP\/1\.1 200 /);
    socket.removeAllListeners('data');
    const tlsSocket = tls.connect({ socket, ca, host: '127.0.0.1' });
    await new Promise((resolve, reject) => {
      tlsSocket.once('secureConnect', resolve);
      tlsSocket.once('error', reject);
    });
    const sent = [
      'x-CUSTOM: a',
      'Accept-Language: b',
      `Host: ${authority}`,
      `X-Rota-Country: ${up.country}`,
      'user-Agent: c',
    ];
    const before = secure.heads.length;
    tlsSocket.write(`GET /i HTTP/1.1\r\n${sent.map((l) => `${l}\r\n`).join('')}\r\n`);
    const answer = await readAll(tlsSocket as unknown as net.Socket, complete);
    tlsSocket.destroy();
    assert.match(answer, /^HTTP\/1\.1 200 /, `${up.name}: ${answer}`);
    assert.deepEqual(
      lines(secure.heads[before]),
      ['x-CUSTOM: a', 'Accept-Language: b', `Host: ${authority}`, 'user-Agent: c'],
      up.name,
    );
  }
});
