import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  inV4Range,
  numericHost,
  publicV4,
  randomCase,
  toUint,
  V4_SPECIAL,
  v6Forms,
} from '../../test/helpers/ssrf.ts';
import { lookupAll, type Resolver, SsrfGuard } from './guard.ts';
import type { SsrfReason, SsrfVerdict } from './types.ts';

/** A resolver that answers from a table and records what it was asked. */
function fakeDns(table: Record<string, string[]>): Resolver & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (host: string): Promise<string[]> => {
    asked.push(host);
    const answer = table[host];
    if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return answer;
  };
  return Object.assign(resolve, { asked });
}

const noDns: Resolver = async () => {
  throw new Error('DNS must not be used here');
};

function reasonOf(v: SsrfVerdict): SsrfReason | 'ok' {
  return v.ok ? 'ok' : v.reason;
}

const guard = new SsrfGuard({ allow: [], resolve: noDns });

describe('SsrfGuard: URL shape', () => {
  const table: ReadonlyArray<readonly [string, SsrfReason]> = [
    ['file:///etc/passwd', 'scheme'],
    ['data:text/plain,hi', 'scheme'],
    ['ftp://example.com/', 'scheme'],
    ['gopher://example.com/', 'scheme'],
    ['javascript:alert(1)', 'scheme'],
    ['ws://example.com/', 'scheme'],
    ['http://good.com@127.0.0.1/', 'credentials'],
    ['http://user:pass@example.com/', 'credentials'],
    ['http://127.0.0.1:80@example.com/', 'credentials'],
    ['http://example.com%2F@127.0.0.1/', 'credentials'],
    ['http://:@127.0.0.1/', 'loopback'],
    ['http:\\\\127.0.0.1\\x', 'loopback'],
    ['http://127.0.0.%31/', 'loopback'],
    ['http://%6c%6fcalhost/', 'loopback'],
    ['http://１２７.０.０.１/', 'loopback'],
    ['http://LOCALHOST./', 'loopback'],
    ['http://api.localhost/', 'loopback'],
    ['http://foo。local/', 'internal_domain'],
    ['http://Metadata.Google.Internal./', 'internal_domain'],
    ['https://printer.LAN/', 'internal_domain'],
    ['http://intranet/', 'internal_domain'],
    ['http://0/', 'unspecified'],
    ['http://[::]/', 'unspecified'],
    ['http://[::1]:8080/', 'loopback'],
    ['http://169.254.169.254/latest/meta-data/', 'link_local'],
    ['http://[fd00::1]/', 'private'],
    ['not a url', 'malformed'],
    ['http://1.2.3.4.5/', 'malformed'],
  ];
  for (const [url, want] of table) {
    it(`${JSON.stringify(url)} → ${want}`, async () => assert.equal(reasonOf(await guard.check(url)), want));
  }

  it('checks the host the request really goes to (backslash trick) and hands back that URL', async () => {
    const dns = fakeDns({ 'evil.com': ['93.184.215.14'] });
    const v = await new SsrfGuard({ allow: [], resolve: dns }).check('http://evil.com\\@127.0.0.1/');
    assert.deepEqual(v, { ok: true, url: 'http://evil.com/@127.0.0.1/', addresses: ['93.184.215.14'] });
    assert.deepEqual(dns.asked, ['evil.com']);
  });

  it('accepts a URL object and never echoes credentials', async () => {
    const v = await guard.check(new URL('http://admin:s3cret@10.0.0.1/'));
    assert.equal(v.ok, false);
    assert.ok(!v.ok && !/admin|s3cret|10\.0\.0\.1/.test(v.message), v.ok ? '' : v.message);
  });
});

describe('SsrfGuard: literal addresses in every notation', () => {
  it('rejects special IPv4 addresses written as decimal, octal, hex or short numbers', async () => {
    for (const [cidr, reason] of V4_SPECIAL) {
      const arb = inV4Range(cidr).chain((ip) => numericHost(toUint(ip)));
      await fc.assert(
        fc.asyncProperty(arb, async (host) => reasonOf(await guard.check(`http://${host}/`)) === reason),
        { numRuns: 40 },
      );
    }
  });

  it('rejects special IPv4 addresses wrapped in IPv6 (mapped, compatible, NAT64, 6to4, Teredo)', async () => {
    for (const [cidr, reason] of V4_SPECIAL) {
      await fc.assert(
        fc.asyncProperty(inV4Range(cidr), async (ip) => {
          for (const form of v6Forms(ip)) {
            assert.equal(reasonOf(await guard.check(`https://[${form}]:443/x`)), reason, form);
          }
        }),
        { numRuns: 15 },
      );
    }
  });

  it('passes public IPv4 addresses in any notation without DNS, returning the dotted address', async () => {
    const arb = publicV4.chain((ip) => numericHost(toUint(ip)).map((h) => [ip, h] as const));
    await fc.assert(
      fc.asyncProperty(arb, async ([ip, host]) => {
        assert.deepEqual(await guard.check(`http://${host}/p?q=1`), {
          ok: true,
          url: `http://${ip}/p?q=1`,
          addresses: [ip],
        });
      }),
      { numRuns: 300 },
    );
  });
});

describe('SsrfGuard: host names and DNS', () => {
  it('rejects internal suffixes in random case with trailing dots, before any DNS', async () => {
    const arb = fc
      .tuple(fc.constantFrom('local', 'internal', 'lan', 'corp'), fc.nat({ max: 1 }))
      .chain(([s, dots]) => randomCase(`svc.${s}`).map((n) => `${n}${'.'.repeat(dots)}`));
    await fc.assert(
      fc.asyncProperty(
        arb,
        async (name) => reasonOf(await guard.check(`http://${name}/`)) === 'internal_domain',
      ),
    );
  });

  it('rejects a name when any one of its addresses is special', async () => {
    const dns = fakeDns({ 'mixed.example': ['93.184.215.14', '2606:4700::1', '10.0.0.7'] });
    const v = await new SsrfGuard({ allow: [], resolve: dns }).check('http://mixed.example/');
    assert.deepEqual(v, {
      ok: false,
      reason: 'private',
      message: 'the target host resolves to a private address',
    });
  });

  it('property: one special address among public ones is always caught', async () => {
    const arb = fc
      .tuple(fc.array(publicV4, { maxLength: 4 }), fc.constantFrom(...V4_SPECIAL))
      .chain(([pub, [cidr, r]]) =>
        inV4Range(cidr).chain((bad) =>
          fc.shuffledSubarray([...pub, bad], { minLength: pub.length + 1 }).map((all) => [all, r] as const),
        ),
      );
    await fc.assert(
      fc.asyncProperty(arb, async ([addresses, reason]) => {
        const g = new SsrfGuard({ allow: [], resolve: async () => addresses });
        return reasonOf(await g.check('https://www.example.com/')) === reason;
      }),
      { numRuns: 200 },
    );
  });

  it('passes a name whose addresses are all public and returns them without duplicates', async () => {
    const dns = fakeDns({
      'www.example.com.': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c', '93.184.215.14'],
    });
    const v = await new SsrfGuard({ allow: [], resolve: dns }).check('https://WWW.Example.com./');
    assert.deepEqual(v, {
      ok: true,
      url: 'https://www.example.com./',
      addresses: ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    });
  });

  it('NXDOMAIN, an empty answer, garbage or a throwing resolver are unresolvable', async () => {
    const resolvers: Resolver[] = [
      fakeDns({}),
      async () => [],
      async () => ['not-an-ip'],
      () => {
        throw new Error('sync failure');
      },
    ];
    for (const resolve of resolvers) {
      const v = await new SsrfGuard({ allow: [], resolve }).check('http://example.com/');
      assert.equal(reasonOf(v), 'unresolvable');
    }
  });

  it('a slow resolver hits the timeout and is told to abort', async () => {
    let signal: AbortSignal | undefined;
    const slow: Resolver = (_host, s) => {
      signal = s;
      return new Promise((done) => setTimeout(() => done(['93.184.215.14']), 2_000).unref());
    };
    const started = performance.now();
    const v = await new SsrfGuard({ allow: [], resolve: slow, resolveTimeoutMs: 50 }).check(
      'http://slow.example/',
    );
    assert.equal(reasonOf(v), 'unresolvable');
    assert.ok(performance.now() - started < 1_000);
    assert.equal(signal?.aborted, true);
  });

  it('the default resolver returns every address getaddrinfo knows (from /etc/hosts here)', async () => {
    const addresses = await lookupAll('localhost');
    assert.ok(addresses.length > 0);
    assert.ok(addresses.every((a) => isIP(a) !== 0));
    assert.ok(addresses.some((a) => a === '127.0.0.1' || a === '::1'));
  });

  it('the default resolver turns a name that cannot exist into unresolvable', async () => {
    const v = await new SsrfGuard({ allow: [], resolveTimeoutMs: 1_500 }).check(
      'http://no-such-host.invalid/',
    );
    assert.equal(reasonOf(v), 'unresolvable');
  });
});

describe('SsrfGuard: allow list', () => {
  const dns = fakeDns({ 'db.example.com': ['10.20.0.5'], 'other.example.com': ['10.30.0.5'] });
  const g = new SsrfGuard({
    allow: ['10.20.0.0/16', 'fd00::/8', 'metadata.internal', '*.svc.corp'],
    resolve: dns,
  });

  it('a listed CIDR exempts literal, IPv4-mapped and resolved addresses inside it only', async () => {
    assert.deepEqual(await g.check('http://10.20.1.1/'), {
      ok: true,
      url: 'http://10.20.1.1/',
      addresses: ['10.20.1.1'],
    });
    assert.equal(reasonOf(await g.check('http://[::ffff:10.20.1.1]/')), 'ok');
    assert.equal(reasonOf(await g.check('http://[fd00::5]/')), 'ok');
    assert.equal(reasonOf(await g.check('http://db.example.com/')), 'ok');
    assert.equal(reasonOf(await g.check('http://10.21.0.1/')), 'private');
    assert.equal(reasonOf(await g.check('http://other.example.com/')), 'private');
    assert.equal(reasonOf(await g.check('http://127.0.0.1/')), 'loopback');
  });

  it('a listed host skips the name rules and DNS; a wildcard covers subdomains', async () => {
    dns.asked.length = 0;
    assert.deepEqual(await g.check('http://METADATA.internal./x'), {
      ok: true,
      url: 'http://metadata.internal./x',
      addresses: [],
    });
    assert.equal(reasonOf(await g.check('http://api.svc.corp/')), 'ok');
    assert.deepEqual(dns.asked, []);
    assert.equal(reasonOf(await g.check('http://svc.corp/')), 'internal_domain');
    assert.equal(reasonOf(await g.check('http://other.internal/')), 'internal_domain');
  });

  it('an allowed host name still needs an http(s) scheme and no credentials', async () => {
    assert.equal(reasonOf(await g.check('ftp://metadata.internal/')), 'scheme');
    assert.equal(reasonOf(await g.check('http://u:p@metadata.internal/')), 'credentials');
  });
});

describe('SsrfGuard: robustness', () => {
  const random: Resolver = async (host) => (host.length % 2 === 0 ? ['93.184.215.14'] : ['192.168.0.1']);
  const g = new SsrfGuard({ allow: ['10.0.0.0/8', 'x.example'], resolve: random });

  function wellFormed(v: SsrfVerdict): boolean {
    if (v.ok) return typeof v.url === 'string' && v.addresses.every((a) => isIP(a) !== 0);
    return typeof v.reason === 'string' && v.message.length > 0 && v.message.length < 100;
  }

  it('random strings and URLs never make check() throw or reject', async () => {
    const junk = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
      fc.webUrl().map((u) => u.replace('//', '//user:pw@')),
      fc.string().map((s) => `http://${s}`),
      fc.ipV4Extended().map((ip) => `http://${ip}/`),
      fc.ipV6().map((ip) => `http://[${ip}]/`),
    );
    await fc.assert(
      fc.asyncProperty(junk, async (s) => wellFormed(await g.check(s))),
      { numRuns: 1500 },
    );
  });
});
