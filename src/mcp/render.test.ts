import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FetchAnswer } from './backend.ts';
import { renderFetch } from './render.ts';

function answer(body: Buffer, headers: Record<string, string> = {}): FetchAnswer {
  return {
    status_code: 200,
    headers: { 'content-type': 'text/plain; charset=utf-8', 'x-other': 'hidden', ...headers },
    body,
    proxy_used: 'http://127.0.0.1:3128',
    proxy_id: 'p',
    attempts: 1,
    elapsed_ms: 1,
  };
}

test('a text body within max_bytes is shown whole, with the selected headers only', () => {
  const v = renderFetch(answer(Buffer.from('hello')), 10);
  assert.deepEqual([v.body, v.truncated, v.bytes, v.note], ['hello', false, 5, undefined]);
  assert.deepEqual(v.headers, { 'content-type': 'text/plain; charset=utf-8' });
});

test('a cut never splits a character: it falls before a 2-, 3- or 4-byte one it would break', () => {
  for (const ch of ['é', '€', '😀']) {
    const body = Buffer.from(`a${ch}`);
    for (let max = 1; max < body.length; max++) {
      const v = renderFetch(answer(body), max);
      assert.equal(v.body, 'a', `${ch} at ${max}`);
      assert.equal(v.truncated, true);
      assert.equal(v.note, `body cut at 1 of ${body.length} bytes (max_bytes)`);
    }
    assert.equal(renderFetch(answer(body), body.length).body, `a${ch}`);
  }
});

test('binary content is described, not shown: by type, by encoding, by bytes', () => {
  const png = renderFetch(answer(Buffer.from([0x89, 0x50]), { 'content-type': 'image/png' }), 100);
  assert.deepEqual([png.body, png.truncated], [null, false]);
  assert.equal(png.note, 'binary content (image/png), 2 bytes: not shown');
  const gz = renderFetch(answer(Buffer.from('x'), { 'content-encoding': 'gzip' }), 100);
  assert.equal(gz.note, 'binary content (encoded (gzip)), 1 bytes: not shown');
  const bad = renderFetch(answer(Buffer.from([0xff, 0xfe, 0x00])), 100);
  assert.match(bad.note ?? '', /not UTF-8 text/);
  const json = renderFetch(answer(Buffer.from('{"a":1}'), { 'content-type': 'application/ld+json' }), 100);
  assert.equal(json.body, '{"a":1}');
});
