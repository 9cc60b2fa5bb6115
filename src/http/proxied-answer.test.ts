import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { FastifyRequest } from 'fastify';
import { bodyLiteral, bodyParts, type ProxiedFields, proxiedAnswer } from './proxied-answer.ts';

const req = { id: 'req-1' } as FastifyRequest;
const fields: ProxiedFields = {
  status_code: 200,
  headers: { 'content-type': 'text/html', 'set-cookie': ['a=1', 'b=2'], 'x-latin1': 'caf\u00e9' },
  proxy_used: 'http://127.0.0.1:3128',
  proxy_id: 'p-1',
  attempts: 1,
  elapsed_ms: 1.25,
};

/** Forces the byte path, whatever the body's size. */
const BYTES = { smallBytes: -1 };

function parse(out: Buffer | string) {
  if (typeof out === 'string') return JSON.parse(out);
  assert.ok(isUtf8(out), 'the answer is UTF-8');
  return JSON.parse(out.toString('utf8'));
}

const bytesOf = (out: Buffer | string) => (typeof out === 'string' ? Buffer.from(out, 'utf8') : out);

describe('the proxied answer, written as bytes', () => {
  it('round-trips any UTF-8 text: quotes, backslashes, control characters, every plane', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (s) => {
        const body = Buffer.from(s, 'utf8');
        const got = parse(proxiedAnswer(req, fields, body, BYTES));
        assert.equal(got.data.body, body.toString('utf8'));
        assert.equal(got.data.body_encoding, 'utf8');
      }),
      { numRuns: 500 },
    );
  });

  it('sends any other bytes as base64, and UTF-8 ones as text', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const body = Buffer.from(bytes);
        const got = parse(proxiedAnswer(req, fields, body, BYTES));
        if (isUtf8(body)) {
          assert.equal(got.data.body_encoding, 'utf8');
          assert.equal(got.data.body, body.toString('utf8'));
        } else {
          assert.equal(got.data.body_encoding, 'base64');
          assert.deepEqual(Buffer.from(got.data.body, 'base64'), body);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('keeps every other field of the envelope, non-ASCII header values included', () => {
    const got = parse(proxiedAnswer(req, fields, Buffer.from('{"ok":"\\"x\\""}\n\t\u0001')));
    assert.deepEqual(Object.keys(got), ['status', 'data', 'error', 'meta']);
    assert.equal(got.status, 'success');
    assert.equal(got.error, null);
    assert.equal(got.meta.request_id, 'req-1');
    assert.deepEqual(Object.keys(got.data), [
      'status_code',
      'headers',
      'body',
      'body_encoding',
      'proxy_used',
      'proxy_id',
      'attempts',
      'elapsed_ms',
    ]);
    assert.deepEqual(got.data.headers, fields.headers);
    assert.equal(got.data.body, '{"ok":"\\"x\\""}\n\t\u0001');
    assert.equal(got.data.elapsed_ms, 1.25);
  });

  it('is not confused by an upstream header that carries the slot', () => {
    const slot = 'guessed-slot';
    const sneaky = { ...fields, headers: { 'x-a': slot, 'x-b': `"${slot}"` } };
    for (const body of [Buffer.from('plain text'), Buffer.from([0xff, 0xfe, 0x00])]) {
      const got = parse(proxiedAnswer(req, sneaky, body, { ...BYTES, slot }));
      assert.deepEqual(got.data.headers, sneaky.headers);
      const expected = isUtf8(body) ? body.toString('utf8') : body.toString('base64');
      assert.equal(got.data.body, expected);
    }
    const twice = { ...fields, headers: { [slot]: slot } };
    assert.equal(parse(proxiedAnswer(req, twice, Buffer.from('x'), { ...BYTES, slot })).data.body, 'x');
  });

  it('quotes the body with native escaping only where JSON requires it', () => {
    assert.equal(bodyLiteral(Buffer.from('é"\\\n')).literal, '"\u00c3\u00a9\\"\\\\\\n"');
    assert.deepEqual(bodyLiteral(Buffer.from([0xc3])), { literal: '"ww=="', encoding: 'base64' });
    assert.deepEqual(bodyLiteral(Buffer.alloc(0)), { literal: '""', encoding: 'utf8' });
    // Byte for byte: a byte-order mark is part of the body and stays.
    for (const o of [{}, BYTES]) {
      const bom = parse(proxiedAnswer(req, fields, Buffer.from([0xef, 0xbb, 0xbf, 0x61]), o));
      assert.equal(bom.data.body, '\ufeffa');
    }
  });

  it('gives a small body the same bytes as a plain string as through the byte path', () => {
    const sameClock = (out: Buffer | string) =>
      bytesOf(out)
        .toString('latin1')
        .replace(/"timestamp":"[^"]+"/, '"timestamp":"T"');
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
          fc.string({ unit: 'binary', maxLength: 300 }).map((t) => Buffer.from(t, 'utf8')),
        ),
        (body) => {
          const small = proxiedAnswer(req, fields, body);
          if (isUtf8(body)) assert.equal(typeof small, 'string', 'a small UTF-8 body takes the string path');
          assert.equal(sameClock(small), sameClock(proxiedAnswer(req, fields, body, BYTES)));
        },
      ),
      { numRuns: 500 },
    );
    const big = Buffer.alloc(20 * 1024, 'a');
    assert.ok(Buffer.isBuffer(proxiedAnswer(req, fields, big)), 'over 16 KiB: the byte path');
  });

  it('the body in parts is the whole literal, across part boundaries, UTF-8 and base64 alike', () => {
    const PART = 3 * 21 * 1024;
    // A multi-byte character and escapes straddling each part boundary; one stray byte makes it base64.
    const text = Buffer.from('é"\\\n\u0001ü€'.repeat(Math.ceil((2.5 * PART) / 12)), 'utf8');
    const notUtf8 = Buffer.concat([text, Buffer.from([0xff]), text]);
    for (const body of [text, notUtf8, text.subarray(0, PART), text.subarray(0, PART + 1), Buffer.alloc(0)]) {
      const whole = bodyLiteral(body);
      const split = bodyParts(body);
      assert.equal(split.encoding, whole.encoding);
      assert.equal(`"${split.parts.join('')}"`, whole.literal);
      assert.equal(split.bytes, whole.literal.length - 2);
    }
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3 * PART }), fc.boolean(), (bytes, asText) => {
        const body = asText ? Buffer.from(Buffer.from(bytes).toString('latin1'), 'utf8') : Buffer.from(bytes);
        assert.equal(`"${bodyParts(body).parts.join('')}"`, bodyLiteral(body).literal);
      }),
      { numRuns: 40 },
    );
  });
});
