// Tests for the SOCKS5 codec: every message whole, split at every byte, followed by the next message's
// bytes, and malformed; plus properties over arbitrary bytes, since the parsers face raw client input.
import assert from 'node:assert/strict';
import { isIPv6 } from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import {
  authStatus,
  COMMAND,
  METHOD,
  methodSelection,
  type Parsed,
  parseGreeting,
  parseRequest,
  parseUserPass,
  REPLY,
  reply,
} from './socks5-protocol.ts';

type Parser = (buf: Buffer) => Parsed<unknown>;
// Leading bytes that get random input past each parser's version checks, to reach 'ok' and deep 'bad'.
const PARSERS: ReadonlyArray<[string, Parser, number[][]]> = [
  ['parseGreeting', parseGreeting, [[], [5], [5, 1]]],
  ['parseUserPass', parseUserPass, [[], [1], [1, 3], [1, 1, 0x61]]],
  ['parseRequest', parseRequest, [[], [5], [5, 1, 0, 1], [5, 1, 0, 3], [5, 1, 0, 4], [5, 1, 0, 3, 4]]],
];

const b = (...bytes: number[]): Buffer => Buffer.from(bytes);
const port = (p: number): number[] => [p >> 8, p & 0xff];

/** Every strict prefix asks for more; the whole, and the whole plus trailing bytes, give `value`. */
function assertComplete<T>(parse: (buf: Buffer) => Parsed<T>, msg: Buffer, value: T): void {
  for (let i = 0; i < msg.length; i++) {
    assert.deepEqual(parse(msg.subarray(0, i)), { type: 'more' }, `prefix of ${i} bytes`);
  }
  assert.deepEqual(parse(msg), { type: 'ok', value, used: msg.length });
  const extra = Buffer.concat([msg, b(0x05, 0x01, 0x00, 0xff)]);
  assert.deepEqual(parse(extra), { type: 'ok', value, used: msg.length });
}

function assertBad(result: Parsed<unknown>, reply?: number): void {
  assert.equal(result.type, 'bad');
  if (result.type === 'bad') assert.equal(result.reply, reply);
}

/** Independent RFC 5952 formatter, to check the ipaddr-based one against. */
function rfc5952(bytes: Uint8Array): string {
  const groups = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16));
  let best = { at: -1, len: 1 };
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > best.len) best = { at: i, len: j - i };
    i = j === i ? i + 1 : j;
  }
  if (best.at < 0) return groups.join(':');
  return `${groups.slice(0, best.at).join(':')}::${groups.slice(best.at + best.len).join(':')}`;
}

describe('parseGreeting', () => {
  it('parses methods incrementally', () => {
    assertComplete(parseGreeting, b(5, 2, METHOD.NO_AUTH, METHOD.USER_PASS), { methods: [0, 2] });
    assertComplete(parseGreeting, b(5, 1, 0x80), { methods: [0x80] });
    const all = Array.from({ length: 255 }, (_, i) => i);
    assertComplete(parseGreeting, b(5, 255, ...all), { methods: all });
  });
  it('rejects a wrong version and an empty method list', () => {
    assertBad(parseGreeting(b(4)));
    assertBad(parseGreeting(b(4, 1, 0)));
    assertBad(parseGreeting(b(0x47, 0x45, 0x54)));
    assertBad(parseGreeting(b(5, 0)));
    assertBad(parseGreeting(b(5, 0, 0)));
  });
});

describe('parseUserPass', () => {
  it('parses credentials as UTF-8', () => {
    const pass = Buffer.from('sëcr€');
    const msg = Buffer.concat([b(1, 4), Buffer.from('user'), b(pass.length), pass]);
    assertComplete(parseUserPass, msg, { username: 'user', password: 'sëcr€' });
  });
  it('accepts an empty password and maximal lengths', () => {
    assertComplete(parseUserPass, b(1, 1, 0x61, 0), { username: 'a', password: '' });
    const long = 'x'.repeat(255);
    const msg = Buffer.concat([b(1, 255), Buffer.from(long), b(255), Buffer.from(long)]);
    assertComplete(parseUserPass, msg, { username: long, password: long });
  });
  it('rejects a wrong version, an empty username and invalid UTF-8', () => {
    assertBad(parseUserPass(b(5, 1, 0x61, 0)));
    assertBad(parseUserPass(b(2)));
    assertBad(parseUserPass(b(1, 0)));
    assertBad(parseUserPass(b(1, 0, 0)));
    assertBad(parseUserPass(b(1, 1, 0xff, 0)));
    assertBad(parseUserPass(b(1, 1, 0x61, 2, 0xc3, 0x28)));
  });
});

describe('parseRequest', () => {
  it('parses an IPv4 CONNECT', () => {
    assertComplete(parseRequest, b(5, COMMAND.CONNECT, 0, 1, 93, 184, 216, 34, ...port(443)), {
      command: COMMAND.CONNECT,
      address: { type: 'ipv4', host: '93.184.216.34', port: 443 },
    });
  });
  it('parses a domain and returns the command and port 0 as they are', () => {
    const name = Buffer.from('Example.COM');
    assertComplete(
      parseRequest,
      Buffer.concat([b(5, COMMAND.UDP_ASSOCIATE, 0, 3, name.length), name, b(0, 0)]),
      {
        command: COMMAND.UDP_ASSOCIATE,
        address: { type: 'domain', host: 'Example.COM', port: 0 },
      },
    );
  });
  it('formats IPv6 hosts in compressed lower-case form', () => {
    for (const [text, host] of [
      ['::1', '::1'],
      ['2001:DB8::1', '2001:db8::1'],
      ['::ffff:1.2.3.4', '::ffff:102:304'],
      ['1:0:0:2:0:0:0:3', '1:0:0:2::3'],
      ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
      ['::', '::'],
    ] as const) {
      const msg = b(5, COMMAND.BIND, 0, 4, ...ipaddr.IPv6.parse(text).toByteArray(), ...port(65535));
      assertComplete(parseRequest, msg, {
        command: COMMAND.BIND,
        address: { type: 'ipv6', host, port: 65535 },
      });
    }
  });
  it('accepts a non-zero RSV byte', () => {
    const result = parseRequest(b(5, 1, 0xaa, 1, 127, 0, 0, 1, 0, 80));
    assert.equal(result.type, 'ok');
  });
  it('rejects a wrong version without a reply code', () => {
    assertBad(parseRequest(b(4, 1, 0, 1, 1, 2, 3, 4, 0, 80)));
    assertBad(parseRequest(b(0x43)));
  });
  it('rejects unknown address types with 0x08 as soon as ATYP arrives', () => {
    for (const atyp of [0, 2, 5, 0xff]) {
      assertBad(parseRequest(b(5, 1, 0, atyp)), REPLY.ADDRESS_TYPE_NOT_SUPPORTED);
    }
  });
  it('rejects empty and non-printable domain names with 0x01', () => {
    assertBad(parseRequest(b(5, 1, 0, 3, 0)), REPLY.GENERAL_FAILURE);
    for (const bad of [0x20, 0x00, 0x7f, 0x80, 0xff, 0x0a]) {
      const msg = b(5, 1, 0, 3, 3, 0x61, bad, 0x62, 0, 80);
      assert.deepEqual(parseRequest(msg.subarray(0, 9)), { type: 'more' });
      assertBad(parseRequest(msg), REPLY.GENERAL_FAILURE);
    }
  });
});

describe('encoders', () => {
  it('encodes method selection and auth status', () => {
    assert.deepEqual(methodSelection(METHOD.USER_PASS), b(5, 2));
    assert.deepEqual(methodSelection(METHOD.NONE_ACCEPTABLE), b(5, 0xff));
    assert.deepEqual(authStatus(true), b(1, 0));
    assert.deepEqual(authStatus(false), b(1, 1));
  });
  it('encodes replies with and without a bound address', () => {
    assert.deepEqual(reply(REPLY.COMMAND_NOT_SUPPORTED), b(5, 7, 0, 1, 0, 0, 0, 0, 0, 0));
    assert.deepEqual(
      reply(REPLY.SUCCEEDED, { host: '10.1.2.3', port: 1080 }),
      b(5, 0, 0, 1, 10, 1, 2, 3, 4, 56),
    );
    const v6 = b(5, 0, 0, 4, ...Array(15).fill(0), 1, 0, 80);
    assert.deepEqual(reply(REPLY.SUCCEEDED, { host: '::1', port: 80 }), v6);
    assert.deepEqual(reply(REPLY.SUCCEEDED, { host: '[::1]', port: 80 }), v6);
    assert.deepEqual(
      reply(0, { host: 'proxy.local', port: 1 }),
      Buffer.concat([b(5, 0, 0, 3, 11), Buffer.from('proxy.local'), b(0, 1)]),
    );
  });
  it('throws on values a byte cannot hold instead of wrapping them', () => {
    assert.throws(() => reply(256), RangeError);
    assert.throws(() => reply(-1), RangeError);
    assert.throws(() => methodSelection(0x100), RangeError);
    assert.throws(() => reply(0, { host: '1.2.3.4', port: 65536 }), RangeError);
    assert.throws(() => reply(0, { host: 'bad host', port: 1 }), RangeError);
    assert.throws(() => reply(0, { host: '', port: 1 }), RangeError);
  });
  it('replies share the request layout, so they parse back', () => {
    const hosts = fc.oneof(
      fc.ipV4(),
      fc.ipV6().map((h) => ipaddr.IPv6.parse(h).toRFC5952String()),
      fc.domain(),
    );
    fc.assert(
      fc.property(fc.nat(255), hosts, fc.nat(65535), (code, host, p) => {
        const result = parseRequest(reply(code, { host, port: p }));
        assert.equal(result.type, 'ok');
        if (result.type !== 'ok') return;
        assert.equal(result.value.command, code);
        assert.equal(result.value.address.host, host);
        assert.equal(result.value.address.port, p);
      }),
    );
  });
});

describe('properties', () => {
  const bytes = (prefixes: number[][]): fc.Arbitrary<Buffer> =>
    fc
      .tuple(
        fc.constantFrom(...prefixes),
        fc.oneof(
          fc.uint8Array({ maxLength: 600 }),
          // Small or printable bytes make plausible lengths, valid UTF-8 and valid names.
          fc.uint8Array({ maxLength: 600, max: 7 }),
          fc.uint8Array({ maxLength: 600, min: 0x21, max: 0x7e }),
        ),
      )
      .map(([head, tail]) => Buffer.concat([Buffer.from(head), tail]));

  for (const [name, parse, prefixes] of PARSERS) {
    it(`${name} is total, consistent on prefixes, and stays bad once bad`, () => {
      fc.assert(
        fc.property(bytes(prefixes), fc.uint8Array({ maxLength: 8 }), (buf, more) => {
          const result = parse(buf);
          assert.ok(['more', 'ok', 'bad'].includes(result.type));
          if (result.type === 'bad') {
            assert.ok(result.reply === undefined || (result.reply >= 0 && result.reply <= 0xff));
            assert.deepEqual(parse(Buffer.concat([buf, more])), result);
          }
          if (result.type !== 'ok') return;
          assert.ok(result.used >= 1 && result.used <= buf.length);
          for (let i = 0; i <= buf.length; i++) {
            const r = parse(buf.subarray(0, i));
            if (i < result.used) assert.deepEqual(r, { type: 'more' });
            else assert.deepEqual(r, result);
          }
        }),
        { numRuns: 1000 },
      );
    });
  }

  it('hand-encoded valid requests round-trip', () => {
    const printable = fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c));
    const address = fc.oneof(
      fc.ipV4().map((host) => ({ atyp: 1, host, raw: host.split('.').map(Number) })),
      fc
        .uint8Array({ minLength: 16, maxLength: 16 })
        .map((raw) => ({ atyp: 4, host: rfc5952(raw), raw: [...raw] })),
      fc
        .oneof(fc.domain(), fc.string({ unit: printable, minLength: 1, maxLength: 255 }))
        .map((host) => ({ atyp: 3, host, raw: [host.length, ...Buffer.from(host, 'latin1')] })),
    );
    const types = { 1: 'ipv4', 3: 'domain', 4: 'ipv6' } as const;
    fc.assert(
      fc.property(
        fc.nat(255),
        fc.nat(255),
        address,
        fc.nat(65535),
        fc.uint8Array({ maxLength: 20 }),
        (cmd, rsv, a, p, tail) => {
          const msg = b(5, cmd, rsv, a.atyp, ...a.raw, ...port(p));
          const type = types[a.atyp as keyof typeof types];
          const expected = { command: cmd, address: { type, host: a.host, port: p } };
          assert.deepEqual(parseRequest(Buffer.concat([msg, tail])), {
            type: 'ok',
            value: expected,
            used: msg.length,
          });
          if (type === 'ipv6') assert.ok(isIPv6(a.host));
        },
      ),
    );
  });
});
