// Host patterns: what a pattern may be, its canonical form, the matcher against a naive reference
// (fast-check), the documented JSON Schema pattern against the checker, and the environment variable.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Reader } from '../config-reader.ts';
import { HOST_PATTERN_PATTERN } from '../schemas/patterns.ts';
import {
  checkPattern,
  compilePatterns,
  MAX_PATTERNS,
  normalizeHost,
  normalizePatterns,
  readPatternList,
} from './patterns.ts';

function canonical(input: string): string {
  const c = checkPattern(input);
  assert.ok(c.ok, `${input}: ${c.ok ? '' : c.reason}`);
  return c.pattern;
}

function refusedReason(input: string): string {
  const c = checkPattern(input);
  assert.equal(c.ok, false, input);
  return c.ok ? '' : c.reason;
}

describe('checkPattern', () => {
  it('accepts names, wildcards, * and IP literals, in canonical form', () => {
    assert.equal(canonical('Example.COM'), 'example.com');
    assert.equal(canonical('example.com.'), 'example.com');
    assert.equal(canonical('*.Example.com.'), '*.example.com');
    assert.equal(canonical('*'), '*');
    assert.equal(canonical('localhost'), 'localhost');
    assert.equal(canonical('_dmarc.example.com'), '_dmarc.example.com');
    assert.equal(canonical('xn--bcher-kva.example'), 'xn--bcher-kva.example');
    assert.equal(canonical('10.0.0.1'), '10.0.0.1');
    assert.equal(canonical('2001:DB8:0:0:0:0:0:1'), '2001:db8::1');
    assert.equal(canonical('[::1]'), '::1');
    assert.equal(canonical('1a.example'), '1a.example');
    assert.equal(canonical(`${'a'.repeat(63)}.com`), `${'a'.repeat(63)}.com`);
  });

  it('refuses everything else, with a reason that fits', () => {
    for (const bad of ['a.*.com', '*example.com', '**', '*.*.example.com', 'example.*', '*.']) {
      assert.match(refusedReason(bad), /wildcard|not a host/, bad);
    }
    assert.match(refusedReason('a.*.com'), /wildcard/);
    for (const bad of ['', ' example.com', 'exa mple.com', 'bücher.de', 'ex\u212aample.com', 'a..b', '.a']) {
      assert.equal(checkPattern(bad).ok, false, JSON.stringify(bad));
    }
    for (const bad of ['-a.com', 'a-.com', `${'a'.repeat(64)}.com`, 'a/b', 'a:b', 'http://a.com']) {
      assert.equal(checkPattern(bad).ok, false, bad);
    }
    // Numbers that are not addresses, and addresses where they do not belong.
    for (const bad of ['1.2.3', '01.2.3.4', '1.2.3.256', '1.2.3.4.', '*.1.2.3.4', '[1.2.3.4]', 'a.123']) {
      assert.equal(checkPattern(bad).ok, false, bad);
    }
    for (const bad of ['fe80::1%eth0', '[fe80::1%25eth0]', '[::1', '::1]', ':::1', '[*]']) {
      assert.equal(checkPattern(bad).ok, false, bad);
    }
    assert.match(refusedReason('a'.repeat(254)), /longer than 253/);
  });

  it('the documented pattern accepts exactly what checkPattern accepts', () => {
    const re = new RegExp(HOST_PATTERN_PATTERN, 'u');
    const piece = fc.constantFrom(
      ...[
        'a',
        'Z',
        '0',
        '9',
        '_',
        '-',
        '.',
        '*',
        '*.',
        ':',
        '::',
        '[',
        ']',
        '%',
        ' ',
        'é',
        'ffff',
        '1',
        '255',
      ],
      ...['256', '01', 'xn--', 'com', '1.2.3.4', '::1', 'fe80::', '\u212a', 'a'.repeat(61), '-a', 'a-'],
    );
    const inputs = fc.oneof(
      fc.array(piece, { maxLength: 12 }).map((p) => p.join('')),
      fc.string({ maxLength: 40 }),
      fc.tuple(fc.ipV4(), fc.boolean()).map(([ip, dot]) => (dot ? `${ip}.` : ip)),
      fc.tuple(fc.ipV6(), fc.boolean()).map(([ip, br]) => (br ? `[${ip}]` : ip)),
      fc.tuple(fc.domain(), fc.boolean()).map(([d, wild]) => (wild ? `*.${d}` : d)),
    );
    fc.assert(
      fc.property(inputs, (s) => {
        fc.pre(s.length <= 253);
        assert.equal(re.test(s), checkPattern(s).ok, JSON.stringify(s));
      }),
      { numRuns: 20_000 },
    );
  });
});

describe('normalizePatterns', () => {
  it('drops duplicates after canonical form, keeping the first place', () => {
    assert.deepEqual(normalizePatterns(['B.com', 'a.com', 'b.com.', '::1', '[::1]']), {
      ok: true,
      patterns: ['b.com', 'a.com', '::1'],
    });
  });
  it('reports every bad pattern with its index, and a list that is too long', () => {
    const r = normalizePatterns(['ok.com', 'a.*', 'fine.org', '']);
    assert.equal(r.ok, false);
    assert.deepEqual(r.ok ? [] : r.problems.map((p) => p.index), [1, 3]);
    const long = normalizePatterns(Array.from({ length: MAX_PATTERNS + 1 }, (_, i) => `h${i}.com`));
    assert.equal(long.ok, false);
  });
});

describe('compilePatterns', () => {
  it('matches exactly, by subdomain, everything, and IP literals', () => {
    const m = compilePatterns(['example.com', '*.corp.example', '10.0.0.1', '2001:db8::1']);
    assert.ok(m.matches('example.com'));
    assert.ok(m.matches('EXAMPLE.com.'));
    assert.ok(!m.matches('www.example.com'), 'an exact name is not a wildcard');
    assert.ok(m.matches('a.corp.example'));
    assert.ok(m.matches('a.b.c.corp.example'));
    assert.ok(!m.matches('corp.example'), 'the apex is not its own subdomain');
    assert.ok(!m.matches('xcorp.example'), 'a suffix is matched on a label boundary');
    assert.ok(m.matches('10.0.0.1'));
    assert.ok(!m.matches('10.0.0.10'));
    assert.ok(m.matches('[2001:DB8::0:1]'));
    assert.ok(m.matches('2001:db8:0:0:0:0:0:1'));
    assert.ok(!m.matches(''));
    assert.ok(compilePatterns(['*']).matches('anything.at.all'));
    assert.ok(compilePatterns(['*']).matches('[::1]'));
    assert.ok(!compilePatterns([]).matches('example.com'));
  });
  it('leaves out what is not a pattern (a stored list from another version)', () => {
    const m = compilePatterns(['ok.com', 'a.*.b', '']);
    assert.deepEqual(m.patterns, ['ok.com']);
    assert.ok(m.matches('ok.com'));
  });
  it('agrees with a naive reference on generated hosts and patterns', () => {
    const label = fc.constantFrom('a', 'b', 'c', 'www', 'example', 'com', 'x-1', '_s');
    const name = fc.array(label, { minLength: 1, maxLength: 4 }).map((l) => l.join('.'));
    const pattern = fc.oneof(
      name,
      name.map((n) => `*.${n}`),
      fc.constant('*'),
      fc.constantFrom('10.0.0.1', '::1', '[::1]'),
    );
    const host = fc.oneof(
      name,
      name.map((n) => `${n.toUpperCase()}.`),
      fc.constantFrom('10.0.0.1', '[::1]', '::1', '0:0::1', '10.0.0.2'),
    );
    const naive = (patterns: readonly string[], h: string): boolean => {
      const host0 = normalizeHost(h);
      return patterns.some((p) => {
        const c = canonical(p);
        if (c === '*') return true;
        if (c.startsWith('*.')) return host0.endsWith(c.slice(1)) && host0.length > c.length - 1;
        return host0 === c;
      });
    };
    fc.assert(
      fc.property(fc.array(pattern, { maxLength: 8 }), host, (patterns, h) => {
        assert.equal(compilePatterns(patterns).matches(h), naive(patterns, h), `${patterns} ~ ${h}`);
      }),
      { numRuns: 5_000 },
    );
  });
  it('looks a host up among 1,000 patterns in a few microseconds at most', () => {
    const m = compilePatterns(Array.from({ length: 1_000 }, (_, i) => (i % 2 ? `*.d${i}.com` : `h${i}.com`)));
    const hosts = ['a.b.c.d.e.example.org', 'x.d999.com', 'h998.com', 'nothing.here'];
    const t0 = performance.now();
    let hits = 0;
    for (let i = 0; i < 100_000; i++) if (m.matches(hosts[i & 3] as string)) hits++;
    const perCall = ((performance.now() - t0) * 1000) / 100_000;
    assert.equal(hits, 50_000);
    assert.ok(perCall < 5, `${perCall.toFixed(3)} µs a lookup`);
  });
});

describe('readPatternList (ROTA_INSPECT_HOSTS)', () => {
  it('reads a comma list in canonical form, and names the variable for each bad pattern', () => {
    const good = new Reader({ ROTA_INSPECT_HOSTS: ' Example.com , *.corp.example ,, ::1' });
    assert.deepEqual(readPatternList(good, 'ROTA_INSPECT_HOSTS'), ['example.com', '*.corp.example', '::1']);
    assert.deepEqual(good.problems, []);
    const bad = new Reader({ ROTA_INSPECT_HOSTS: 'ok.com,a.*.b,exa mple' });
    assert.deepEqual(readPatternList(bad, 'ROTA_INSPECT_HOSTS'), []);
    assert.equal(bad.problems.length, 2);
    for (const p of bad.problems) assert.match(p, /^ROTA_INSPECT_HOSTS: "/);
    assert.deepEqual(readPatternList(new Reader({}), 'ROTA_INSPECT_HOSTS'), []);
  });
});
