import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clientErrorResponse, mayAnswer } from './client-error.ts';
import { SECURITY_HEADERS } from './security-headers.ts';

function parse(raw: string) {
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 2)]),
  );
  return { statusLine, headers, body, json: JSON.parse(body) };
}

describe('answers to requests Node refuses before routing', () => {
  const now = new Date('2026-01-02T03:04:05.000Z');

  for (const [nodeCode, status, code] of [
    ['HPE_HEADER_OVERFLOW', 431, 'REQUEST_HEADERS_TOO_LARGE'],
    ['ERR_HTTP_REQUEST_TIMEOUT', 408, 'CLIENT_TIMEOUT'],
    ['HPE_CHUNK_EXTENSIONS_OVERFLOW', 413, 'PAYLOAD_TOO_LARGE'],
    ['HPE_INVALID_METHOD', 400, 'BAD_REQUEST'],
    [undefined, 400, 'BAD_REQUEST'],
  ] as const) {
    it(`${nodeCode ?? 'no code'} → ${status} ${code} in the envelope`, () => {
      const r = parse(clientErrorResponse(nodeCode, 'req-1', now));
      assert.match(r.statusLine, new RegExp(`^HTTP/1\\.1 ${status} `));
      assert.equal(r.json.status, 'error');
      assert.equal(r.json.data, null);
      assert.equal(r.json.error.code, code);
      assert.equal(r.json.error.timestamp, now.toISOString());
      assert.equal(r.json.meta.request_id, 'req-1');
      assert.equal(r.headers['x-request-id'], 'req-1');
      assert.equal(r.headers['content-length'], String(Buffer.byteLength(r.body)));
      assert.equal(r.headers.connection, 'close');
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) assert.equal(r.headers[k], v, k);
    });
  }

  it('answers only when no response on the connection has started', () => {
    assert.equal(mayAnswer({ writable: true }), true);
    assert.equal(mayAnswer({ writable: true, _httpMessage: null }), true);
    assert.equal(mayAnswer({ writable: true, _httpMessage: { headersSent: false } }), true);
    assert.equal(mayAnswer({ writable: true, _httpMessage: { headersSent: true } }), false);
    assert.equal(mayAnswer({ writable: false }), false);
  });
});
