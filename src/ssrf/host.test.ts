import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { numericHost, randomCase } from '../../test/helpers/ssrf.ts';
import { hostNameReason, normalizeHostName, parseNumericIPv4 } from './host.ts';

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/);

describe('parseNumericIPv4', () => {
  const table: ReadonlyArray<readonly [string, string | null]> = [
    ['2130706433', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['017700000001', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['0177.0.0.01', '127.0.0.1'],
    ['10.0x10.1', '10.16.0.1'],
    ['0x', '0.0.0.0'],
    ['0', '0.0.0.0'],
    ['127.0.0.1.', '127.0.0.1'],
    ['4294967295', '255.255.255.255'],
    ['4294967296', null],
    ['256.1.1.1', null],
    ['1.2.3.4.5', null],
    ['08', null],
    ['1..2', null],
    ['example.com', null],
    ['0x7f.1.example', null],
    ['', null],
    ['.', null],
  ];
  for (const [host, want] of table) {
    it(`${JSON.stringify(host)} → ${want}`, () => assert.equal(parseNumericIPv4(host), want));
  }

  it('agrees with the WHATWG URL parser on every notation of random addresses', () => {
    const arb = fc
      .integer({ min: 0, max: 2 ** 32 - 1 })
      .chain((v) => numericHost(v).map((h) => [v, h] as const));
    fc.assert(
      fc.property(arb, ([value, host]) => {
        const dotted = [24, 16, 8, 0].map((s) => Math.floor(value / 2 ** s) % 256).join('.');
        assert.equal(parseNumericIPv4(host), dotted, host);
        assert.equal(new URL(`http://${host}/`).hostname, dotted, host);
      }),
      { numRuns: 2000 },
    );
  });

  it('never disagrees with the URL parser on random dotted strings', () => {
    const chunk = fc.stringMatching(/^(0[xX])?[0-9a-fA-F]{0,12}$/);
    const arb = fc.array(chunk, { minLength: 1, maxLength: 5 }).map((cs) => cs.join('.'));
    fc.assert(
      fc.property(arb, (host) => {
        let theirs: string | null = null;
        try {
          theirs = new URL(`http://${host}/`).hostname;
        } catch {
          // not a valid host for WHATWG either
        }
        const mine = parseNumericIPv4(host);
        if (mine !== null) assert.equal(theirs, mine, host);
        if (theirs !== null && isIP(theirs) === 4) assert.equal(mine, theirs, host);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('hostNameReason', () => {
  it('localhost and its subdomains are loopback, in any case and with trailing dots', () => {
    for (const name of ['localhost', 'LocalHost.', 'a.localhost', 'x.y.LOCALHOST..']) {
      assert.equal(hostNameReason(name), 'loopback', name);
    }
  });

  it('internal suffixes in random case, with or without trailing dots, are internal_domain', () => {
    const suffix = fc.constantFrom('local', 'internal', 'lan', 'corp', 'home.arpa', 'localdomain');
    const arb = fc
      .tuple(fc.array(label, { minLength: 0, maxLength: 3 }), suffix, fc.nat({ max: 2 }))
      .chain(([labels, s, dots]) =>
        randomCase([...labels, s].join('.')).map((name) => `${name}${'.'.repeat(dots)}`),
      );
    fc.assert(
      fc.property(arb, (name) => hostNameReason(name) === 'internal_domain'),
      { numRuns: 1000 },
    );
  });

  it('single-label names are internal_domain', () => {
    fc.assert(fc.property(label, (name) => hostNameReason(name) === 'internal_domain'));
    assert.equal(hostNameReason('intranet.'), 'internal_domain');
  });

  it('ordinary public names pass, including ones that merely contain an internal word', () => {
    for (const name of ['example.com', 'EXAMPLE.COM.', 'local.example.com', 'corp.example', 'mylocal.io']) {
      assert.equal(hostNameReason(name), null, name);
    }
    fc.assert(
      fc.property(
        fc.array(label, { minLength: 1, maxLength: 3 }),
        fc.constantFrom('com', 'org', 'io'),
        (ls, tld) => {
          const name = [...ls, tld].join('.');
          return hostNameReason(name) === null;
        },
      ),
    );
  });

  it('normalizeHostName lower-cases and drops trailing dots', () => {
    assert.equal(normalizeHostName('Foo.Example.COM..'), 'foo.example.com');
  });
});
