import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { inV4Range, publicV4, toDotted, V4_SPECIAL, v6Forms } from '../../test/helpers/ssrf.ts';
import { classifyAddress, embeddedIPv4 } from './address.ts';
import type { SsrfReason } from './types.ts';

describe('classifyAddress: IPv4', () => {
  const table: ReadonlyArray<readonly [string, SsrfReason | null]> = [
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', null],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['100.127.255.255', 'private'],
    ['100.128.0.0', null],
    ['169.254.169.254', 'link_local'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['192.0.0.8', 'reserved'],
    ['198.19.0.1', 'reserved'],
    ['198.51.100.1', 'reserved'],
    ['203.0.113.99', 'reserved'],
    ['8.8.8.8', null],
    ['1.1.1.1', null],
    ['93.184.215.14', null],
  ];
  for (const [ip, want] of table) {
    it(`${ip} → ${want}`, () => assert.equal(classifyAddress(ip), want));
  }

  it('every member of every special range gets its reason', () => {
    for (const [cidr, reason] of V4_SPECIAL) {
      fc.assert(
        fc.property(inV4Range(cidr), (ip) => classifyAddress(ip) === reason),
        { numRuns: 200 },
      );
    }
  });

  it('public addresses pass, and whatever passes is public by an independent table', () => {
    fc.assert(
      fc.property(publicV4, (ip) => classifyAddress(ip) === null),
      { numRuns: 2000 },
    );
    const passes = fc.integer({ min: 0, max: 2 ** 32 - 1 }).map(toDotted);
    fc.assert(
      fc.property(passes, (ip) => {
        if (classifyAddress(ip) !== null) return true;
        return ['unicast', 'as112', 'amt'].includes(ipaddr.IPv4.parse(ip).range());
      }),
      { numRuns: 5000 },
    );
  });
});

describe('classifyAddress: IPv6', () => {
  const table: ReadonlyArray<readonly [string, SsrfReason | null]> = [
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'private'],
    ['fd12:3456:789a::1', 'private'],
    ['fec0::1', 'private'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['febf::1', 'link_local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['3fff::1', 'reserved'],
    ['100::1', 'reserved'],
    ['4000::1', 'reserved'],
    ['::127.0.0.1', 'loopback'],
    ['::7f00:1', 'loopback'],
    ['::a00:1', 'private'],
    ['64:ff9b:1::a9fe:a9fe', 'link_local'],
    ['64:ff9b:1::808:808', 'reserved'],
    ['2606:4700:4700::1111', null],
    ['2001:4860:4860::8888', null],
    ['::ffff:8.8.8.8', null],
    ['::8.8.8.8', null],
    ['2002:808:808::1', null],
  ];
  for (const [ip, want] of table) {
    it(`${ip} → ${want}`, () => assert.equal(classifyAddress(ip), want));
  }

  it('every embedded-IPv4 form of a special address gets the IPv4 reason', () => {
    for (const [cidr, reason] of V4_SPECIAL) {
      fc.assert(
        fc.property(inV4Range(cidr), (v4) => {
          for (const form of v6Forms(v4)) assert.equal(classifyAddress(form), reason, form);
        }),
        { numRuns: 50 },
      );
    }
  });

  it('every embedded-IPv4 form of a public address passes', () => {
    fc.assert(
      fc.property(publicV4, (v4) => {
        for (const form of v6Forms(v4)) assert.equal(classifyAddress(form), null, form);
      }),
      { numRuns: 300 },
    );
  });

  it('embeddedIPv4 decodes Teredo server and client, and 6to4', () => {
    const teredo = ipaddr.IPv6.parse('2001:0:4136:e378:8000:63bf:3fff:fdd2');
    assert.deepEqual(
      embeddedIPv4(teredo)?.map((a) => a.toString()),
      ['65.54.227.120', '192.0.2.45'],
    );
    assert.deepEqual(
      embeddedIPv4(ipaddr.IPv6.parse('2002:c000:204::1'))?.map((a) => a.toString()),
      ['192.0.2.4'],
    );
    assert.equal(embeddedIPv4(ipaddr.IPv6.parse('2606:4700::1')), null);
  });

  it('random global unicast IPv6 outside the special blocks passes', () => {
    const special = ['2001::/23', '2002::/16', '2001:db8::/32', '3fff::/20'].map((c) => ipaddr.parseCIDR(c));
    const global = fc
      .tuple(
        fc.integer({ min: 0x2000, max: 0x3fff }),
        fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 7, maxLength: 7 }),
      )
      .map(([first, rest]) => new ipaddr.IPv6([first, ...rest]))
      .filter((a) => !special.some((r) => a.match(r)));
    fc.assert(
      fc.property(global, (a) => classifyAddress(a.toString()) === null),
      { numRuns: 1000 },
    );
  });
});

describe('classifyAddress: not an address', () => {
  it('fails closed on anything that is not a plain IP literal', () => {
    for (const s of [
      '',
      'localhost',
      '127.1',
      '0x7f.0.0.1',
      '017700000001',
      '2130706433',
      '1.2.3.4.5',
      '[::1',
    ]) {
      assert.equal(classifyAddress(s), 'reserved', s);
    }
  });

  it('never throws on random input', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        classifyAddress(s);
      }),
      { numRuns: 2000 },
    );
  });
});
