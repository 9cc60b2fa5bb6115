import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isRotaHeader } from '../upstream/send.ts';
import { endToEnd } from './http-door.ts';

test('endToEnd drops hop-by-hop headers, the names Connection lists, and the ones asked', () => {
  const out = endToEnd(
    {
      host: 'site',
      connection: 'Keep-Alive, X-Drop-Me',
      'keep-alive': 'timeout=5',
      'x-drop-me': '1',
      'proxy-authorization': 'Basic eDp5',
      'x-rota-session': 's1',
      accept: '*/*',
    },
    ['host'],
  );
  assert.deepEqual(out, { accept: '*/*' });
});

test('endToEnd with the usual Connection values keeps every end-to-end header', () => {
  const headers = { connection: 'keep-alive', accept: '*/*', 'x-a': ['1', '2'] };
  assert.deepEqual(endToEnd(headers), { accept: '*/*', 'x-a': ['1', '2'] });
  assert.deepEqual(endToEnd({ ...headers, connection: 'close' }), { accept: '*/*', 'x-a': ['1', '2'] });
});

test('endToEnd: Connection: close still removes a header named close', () => {
  assert.deepEqual(endToEnd({ connection: 'close', close: 'x', accept: '*/*' }), { accept: '*/*' });
  assert.deepEqual(endToEnd({ connection: 'CLOSE', close: 'x' }), {});
});

test('endToEnd drops every X-Rota-* header, whatever it imitates, and keeps look-alikes', () => {
  const out = endToEnd({
    'x-rota-error': 'FAKE',
    'x-rota-proxy-id': 'evil',
    'x-rota-anything': '1',
    'x-rotation': 'kept',
    'x-rota': 'kept',
    'content-type': 'text/plain',
  });
  assert.deepEqual(out, { 'x-rotation': 'kept', 'x-rota': 'kept', 'content-type': 'text/plain' });
});

test('isRotaHeader: the X-Rota- prefix in any case, nothing else', () => {
  for (const n of ['x-rota-error', 'X-Rota-Proxy-Id', 'X-ROTA-ERROR', 'x-rota-'])
    assert.equal(isRotaHeader(n), true, n);
  for (const n of ['x-rota', 'x-rotation', 'rota-x', 'X-Rot-A', '', 'content-type'])
    assert.equal(isRotaHeader(n), false, n);
});
