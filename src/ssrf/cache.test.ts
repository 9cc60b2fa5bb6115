import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { BoundedCache } from './cache.ts';
import { SsrfGuard } from './guard.ts';

describe('BoundedCache', () => {
  it('forgets an entry once its time to live has passed', () => {
    let now = 1_000;
    const c = new BoundedCache<string>({ max: 10, ttlMs: 30_000, now: () => now });
    c.set('a', 'x');
    now += 29_999;
    assert.equal(c.get('a'), 'x');
    now += 1;
    assert.equal(c.get('a'), undefined);
    assert.equal(c.size, 0);
  });

  it('without a time to live, keeps entries until evicted', () => {
    let now = 0;
    const c = new BoundedCache<number>({ max: 2, now: () => now });
    c.set('a', 1);
    now = Number.MAX_SAFE_INTEGER;
    assert.equal(c.get('a'), 1);
  });

  it('never holds more than max entries and evicts the least recently used', () => {
    const c = new BoundedCache<number>({ max: 3 });
    c.set('a', 1);
    c.set('b', 2);
    c.set('c', 3);
    assert.equal(c.get('a'), 1); // a is now the most recent; b the least
    c.set('d', 4);
    assert.equal(c.size, 3);
    assert.equal(c.get('b'), undefined);
    assert.deepEqual([c.get('a'), c.get('c'), c.get('d')], [1, 3, 4]);
    for (let i = 0; i < 1_000; i++) c.set(`k${i}`, i);
    assert.equal(c.size, 3);
    assert.deepEqual([c.get('k997'), c.get('k998'), c.get('k999')], [997, 998, 999]);
  });

  it('answers and evicts exactly as a list-based LRU would, whatever the order of gets and sets', () => {
    // The model: an array, least recently used first. The cache skips re-inserting its newest key.
    const op = fc.record({ set: fc.boolean(), key: fc.constantFrom('a', 'b', 'c', 'd'), v: fc.nat() });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3 }),
        fc.array(op, { minLength: 10, maxLength: 80 }),
        (max, ops) => {
          const c = new BoundedCache<number>({ max });
          const model: { key: string; v: number }[] = [];
          for (const o of ops) {
            const at = model.findIndex((e) => e.key === o.key);
            const found = at >= 0 ? model.splice(at, 1)[0] : undefined;
            if (o.set) {
              if (model.length >= max) model.shift();
              model.push({ key: o.key, v: o.v });
              c.set(o.key, o.v);
            } else {
              if (found) model.push(found);
              assert.equal(c.get(o.key), found?.v);
            }
            assert.equal(c.size, model.length);
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('caches null verdicts too (a stored null is not a miss)', () => {
    const c = new BoundedCache<string | null>({ max: 2 });
    c.set('ip', null);
    assert.equal(c.get('ip'), null);
  });
});

describe('SsrfGuard caches', () => {
  function countingDns(answers: Record<string, string[]>) {
    const asked: string[] = [];
    const resolve = async (host: string): Promise<string[]> => {
      asked.push(host);
      const a = answers[host];
      if (!a) throw new Error('ENOTFOUND');
      return a;
    };
    return { resolve, asked };
  }

  it('reuses a DNS answer until the TTL passes, then resolves again and sees the new answer', async () => {
    let now = 0;
    const answers: Record<string, string[]> = { 'a.example': ['93.184.215.14'] };
    const dns = countingDns(answers);
    const g = new SsrfGuard({ allow: [], resolve: dns.resolve, dnsCacheTtlMs: 30_000, now: () => now });
    assert.equal((await g.check('http://a.example/')).ok, true);
    answers['a.example'] = ['10.0.0.1'];
    now = 29_000;
    assert.equal((await g.check('http://a.example/x')).ok, true);
    assert.deepEqual(dns.asked, ['a.example']);
    now = 30_000;
    const v = await g.check('http://a.example/');
    assert.equal(v.ok ? 'ok' : v.reason, 'private');
    assert.deepEqual(dns.asked, ['a.example', 'a.example']);
  });

  it('checkKnown decides without DNS what needs none, and agrees with check()', async () => {
    let now = 0;
    const dns = countingDns({ 'd.example': ['93.184.215.14'], 'e.example': ['10.0.0.1'] });
    const g = new SsrfGuard({ allow: [], resolve: dns.resolve, dnsCacheTtlMs: 30_000, now: () => now });
    const reason = (v: ReturnType<SsrfGuard['checkKnown']>) => (v === null ? null : v.ok ? 'ok' : v.reason);
    assert.equal(reason(g.checkKnown(new URL('http://93.184.215.14/'))), 'ok');
    assert.equal(reason(g.checkKnown(new URL('http://127.0.0.1/'))), 'loopback');
    assert.equal(reason(g.checkKnown(new URL('http://u:p@93.184.215.14/'))), 'credentials');
    assert.equal(reason(g.checkKnown(new URL('http://localhost/'))), 'loopback');
    assert.equal(
      g.checkKnown(new URL('http://d.example/')),
      null,
      'a name not yet resolved: check() decides',
    );
    assert.deepEqual(dns.asked, [], 'checkKnown never resolves');
    await g.check('http://d.example/');
    await g.check('http://e.example/');
    assert.equal(reason(g.checkKnown(new URL('http://d.example/'))), 'ok');
    assert.equal(
      reason(g.checkKnown(new URL('http://e.example/'))),
      'private',
      'a cached answer is classified',
    );
    now = 30_000;
    assert.equal(g.checkKnown(new URL('http://e.example/')), null, 'an expired answer is not used');
  });

  it('never caches a failed resolution', async () => {
    const answers: Record<string, string[]> = {};
    const dns = countingDns(answers);
    const g = new SsrfGuard({ allow: [], resolve: dns.resolve });
    const first = await g.check('http://b.example/');
    assert.equal(first.ok ? 'ok' : first.reason, 'unresolvable');
    answers['b.example'] = ['93.184.215.14'];
    assert.equal((await g.check('http://b.example/')).ok, true);
    assert.equal(dns.asked.length, 2);
  });

  it('dnsCacheTtlMs 0 resolves on every check', async () => {
    const dns = countingDns({ 'c.example': ['93.184.215.14'] });
    const g = new SsrfGuard({ allow: [], resolve: dns.resolve, dnsCacheTtlMs: 0 });
    for (let i = 0; i < 3; i++) assert.equal((await g.check('http://c.example/')).ok, true);
    assert.equal(dns.asked.length, 3);
  });

  it('a small cache still gives the same verdicts for many distinct literal addresses', async () => {
    const g = new SsrfGuard({ allow: ['10.1.0.0/16'], cacheSize: 4 });
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 50; i++) {
        const allowed = await g.check(`http://10.1.0.${i}/`);
        const refused = await g.check(`http://10.2.0.${i}/`);
        assert.equal(allowed.ok, true);
        assert.equal(refused.ok ? 'ok' : refused.reason, 'private');
      }
    }
  });
});
