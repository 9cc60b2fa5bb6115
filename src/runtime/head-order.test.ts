import assert from 'node:assert/strict';
import { test } from 'node:test';
import { forwardedHeaders, objectPairs } from '../upstream/forwarded-headers.ts';
import { placeHead, SLOT } from './head-order.ts';

const REQUEST = 'GET /p HTTP/1.1\r\nhost: site:80\r\nconnection: keep-alive\r\n';

test('placeHead: Host and Connection go to their slots under the client spelling', () => {
  const head = `${REQUEST}A: 1\r\n${SLOT}: HOST\r\nB: 2\r\n${SLOT}: connection\r\nC: 3\r\n`;
  assert.equal(
    placeHead(`${head}content-length: 2\r\n\r\n`),
    'GET /p HTTP/1.1\r\nA: 1\r\nHOST: site:80\r\nB: 2\r\nconnection: keep-alive\r\nC: 3\r\ncontent-length: 2\r\n\r\n',
  );
});

test('placeHead: without slots, Host stays second and Connection is left out', () => {
  assert.equal(placeHead(`${REQUEST}A: 1\r\n\r\n`), 'GET /p HTTP/1.1\r\nhost: site:80\r\nA: 1\r\n\r\n');
  const closing = 'HEAD / HTTP/1.1\r\nhost: h\r\nconnection: close\r\n';
  assert.equal(
    placeHead(`${closing}${SLOT}: Connection\r\n\r\n`),
    'HEAD / HTTP/1.1\r\nhost: h\r\nConnection: close\r\n\r\n',
  );
});

test('placeHead: anything but a head undici wrote passes as is', () => {
  for (const s of ['\r\n1a\r\n', '\r\n0\r\n\r\n', 'hello', 'GET / HTTP/1.1\r\nHost: x\r\n\r\n']) {
    assert.equal(placeHead(s), s);
  }
  const upgrade = 'GET / HTTP/1.1\r\nhost: h\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n';
  assert.equal(placeHead(upgrade), upgrade);
});

test('forwardedHeaders: order and case kept; hop-by-hop, Proxy-*, X-Rota-*, Expect dropped; slots for Host and Connection', () => {
  const raw = [
    'x-CUSTOM',
    'a',
    'Host',
    'site',
    'Proxy-Authorization',
    'Basic x',
    'TE',
    'trailers',
    'X-Rota-Session',
    's',
    'Expect',
    '100-continue',
    'Content-Length',
    '2',
    'Connection',
    'keep-alive, X-Gone',
    'x-gone',
    '1',
    'Transfer-Encoding',
    'chunked',
    'user-Agent',
    'c',
  ];
  assert.deepEqual(forwardedHeaders(raw), [
    'x-CUSTOM',
    'a',
    SLOT,
    'Host',
    'Content-Length',
    '2',
    SLOT,
    'Connection',
    'user-Agent',
    'c',
  ]);
  const json = objectPairs({ B: '1', host: 'x', 'content-length': '9', a: '2' });
  assert.deepEqual(forwardedHeaders(json, { dropContentLength: true }), ['B', '1', SLOT, 'host', 'a', '2']);
});
