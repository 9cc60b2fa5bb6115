import assert from 'node:assert/strict';
import { test } from 'node:test';
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
