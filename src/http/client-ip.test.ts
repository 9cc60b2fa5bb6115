import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { ipBucket } from '../lib/ip-bucket.ts';
import { ClientIpResolver } from './client-ip.ts';

const TRUSTED = ['10.0.0.0/8', '192.168.1.0/24', 'fd00::/8'];
const resolver = new ClientIpResolver(TRUSTED, 'X-Forwarded-For');
const ranges = TRUSTED.map((c) => ipaddr.parseCIDR(c));

function canonical(ip: string): string {
  return ipaddr.process(ip).toString();
}

function isTrusted(ip: string): boolean {
  const a = ipaddr.process(ip);
  return ranges.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits));
}

/** Every address an X-Forwarded-For entry can stand for (bare, `[v6]:port`, `v4:port`). */
function entryForms(entry: string): string[] {
  const t = entry.trim();
  const forms = [t, t.replace(/^\[([^\]]+)\](:\d+)?$/, '$1'), t.replace(/:\d+$/, '')];
  return forms.filter((f) => ipaddr.isValid(f)).map(canonical);
}

const v4 = fc.ipV4();
const v6 = fc.ipV6();
const anyIp = fc.oneof(v4, v6);
const untrusted = anyIp.filter((ip) => !isTrusted(ip));
const trustedV4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255)).map(([a, b, c]) => `10.${a}.${b}.${c}`);
const trustedV6 = fc
  .array(fc.integer({ min: 0, max: 0xffff }), { minLength: 7, maxLength: 7 })
  .map((parts) => `fd12:${parts.map((p) => p.toString(16)).join(':')}`);
const trusted = fc.oneof(trustedV4, trustedV6, fc.constant('192.168.1.7'));
/** What a client may put in the header before any trusted proxy touches it: anything at all. */
const forged = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.array(fc.oneof(anyIp, trusted, fc.string({ maxLength: 20 })), { maxLength: 20 }).map((a) => a.join(',')),
);
const headers = (value: string | string[]) => ({ 'x-forwarded-for': value });

describe('client IP: property tests', () => {
  it('an untrusted peer is the client, whatever the header says', () => {
    fc.assert(
      fc.property(untrusted, forged, (peer, header) => {
        assert.equal(resolver.resolve(peer, headers(header)), canonical(peer));
      }),
      { numRuns: 500 },
    );
  });

  it('behind trusted proxies, forged left-hand entries never change the client', () => {
    fc.assert(
      fc.property(
        forged,
        untrusted,
        fc.array(trusted, { maxLength: 4 }),
        trusted,
        (left, client, hops, peer) => {
          const chain = [left, client, ...hops].filter((s) => s !== '').join(', ');
          assert.equal(resolver.resolve(peer, headers(chain)), canonical(client));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('the same chain split over several header lines gives the same client', () => {
    fc.assert(
      fc.property(forged, untrusted, trusted, trusted, (left, client, hop, peer) => {
        const one = resolver.resolve(peer, headers(`${left}, ${client}, ${hop}`));
        const many = resolver.resolve(peer, headers([left, `${client}, ${hop}`]));
        assert.equal(many, one);
        assert.equal(one, canonical(client));
      }),
      { numRuns: 200 },
    );
  });

  it('never throws and never invents an address: the peer or a parsed entry of the header', () => {
    fc.assert(
      fc.property(fc.oneof(anyIp, trusted, fc.string()), forged, (peer, header) => {
        const got = resolver.resolve(peer, headers(header));
        assert.equal(typeof got, 'string');
        if (!ipaddr.isValid(peer)) return;
        const known = header.split(',').flatMap(entryForms);
        assert.ok(got === canonical(peer) || known.includes(got), `${got} from ${peer} / ${header}`);
      }),
      { numRuns: 500 },
    );
  });
});

describe('client IP: examples', () => {
  it('takes the rightmost untrusted hop, skipping trusted ones', () => {
    const h = headers('6.6.6.6, 1.2.3.4, 10.0.0.2, 192.168.1.3');
    assert.equal(resolver.resolve('10.0.0.1', h), '1.2.3.4');
  });

  it('reads IPv4-mapped peers and hops as IPv4, and accepts ports and brackets', () => {
    assert.equal(resolver.resolve('::ffff:10.1.2.3', headers('1.2.3.4:5555')), '1.2.3.4');
    assert.equal(resolver.resolve('10.1.2.3', headers('[2001:db8::1]:443')), '2001:db8::1');
    assert.equal(resolver.resolve('::ffff:1.2.3.4', headers('9.9.9.9')), '1.2.3.4');
  });

  it('garbage to the right of the client makes the peer the client (no guessing)', () => {
    assert.equal(resolver.resolve('10.0.0.1', headers('1.2.3.4, not-an-ip')), '10.0.0.1');
  });

  it('without the header, or without trusted proxies, the peer is the client', () => {
    assert.equal(resolver.resolve('10.0.0.1', {}), '10.0.0.1');
    const open = new ClientIpResolver([], 'x-forwarded-for');
    assert.equal(open.resolve('10.0.0.1', headers('1.2.3.4')), '10.0.0.1');
  });

  it('reads the configured header only, in any case', () => {
    const r = new ClientIpResolver(['10.0.0.0/8'], 'X-Real-IP');
    assert.equal(r.resolve('10.0.0.1', { 'x-real-ip': '1.2.3.4', 'x-forwarded-for': '5.6.7.8' }), '1.2.3.4');
  });

  it('when every hop is trusted, the leftmost is the best known', () => {
    assert.equal(resolver.resolve('10.0.0.1', headers('10.0.0.9, 10.0.0.8')), '10.0.0.9');
  });
});

describe('rate-limit bucket of an address', () => {
  it('IPv6 clients are counted per /64; IPv4 and mapped IPv4 per address', () => {
    assert.equal(ipBucket('2001:db8:1:2:aaaa::1'), ipBucket('2001:db8:1:2:ffff:1:2:3'));
    assert.notEqual(ipBucket('2001:db8:1:2::1'), ipBucket('2001:db8:1:3::1'));
    assert.equal(ipBucket('1.2.3.4'), '1.2.3.4');
    assert.equal(ipBucket('::ffff:1.2.3.4'), '1.2.3.4');
    assert.equal(ipBucket('unknown'), 'unknown');
  });

  it('any two addresses of one /64 share a bucket (property)', () => {
    const group = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 4, maxLength: 4 });
    fc.assert(
      fc.property(group, group, group, (prefix, a, b) => {
        const hex = (p: number[]) => p.map((x) => x.toString(16)).join(':');
        assert.equal(ipBucket(`${hex(prefix)}:${hex(a)}`), ipBucket(`${hex(prefix)}:${hex(b)}`));
      }),
    );
  });
});

describe('client IP without trusted proxies (fast path)', () => {
  // A trusted range no generated peer falls in forces the general, parsing path: both must agree.
  const open = new ClientIpResolver([], 'x-forwarded-for');
  const parsing = new ClientIpResolver(['0.0.0.0/32'], 'x-forwarded-for');
  const peers = fc.oneof(
    v4,
    v6,
    v4.map((ip) => `::ffff:${ip}`),
    fc.ipV4Extended(),
    fc.constantFrom('', 'unknown', ' 1.2.3.4', '01.2.3.4', '1.2.3.4:80', '::FFFF:1.2.3.4', '256.1.1.1'),
  );

  it('answers exactly what the parsing path answers, for any peer string', () => {
    fc.assert(
      fc.property(peers, (peer) => {
        fc.pre(peer !== '0.0.0.0');
        assert.equal(open.resolve(peer, headers('9.9.9.9')), parsing.resolve(peer, {}));
      }),
      { numRuns: 2_000 },
    );
    assert.equal(open.resolve(undefined, {}), 'unknown');
    assert.equal(open.resolve('::ffff:127.0.0.1', {}), '127.0.0.1');
  });

  it('the bucket of an IPv4 address is the address itself', () => {
    fc.assert(fc.property(v4, (ip) => ipBucket(ip) === ip));
  });
});
