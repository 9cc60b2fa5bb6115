import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  candidates,
  chiSquare,
  chiSquareCritical,
  makeEntry,
  seededRandom,
} from '../../test/helpers/rotation.ts';
import { FAILURE_PENALTY_MS, PerformanceBasedStrategy } from './performance-based.ts';
import { RandomStrategy } from './random.ts';
import { SUCCESS_WINDOW, WeightedStrategy } from './weighted.ts';

/** Counts how often each usable member is chosen over `draws` selections. */
function histogram(pick: () => string | undefined, ids: readonly string[], draws: number): number[] {
  const counts = new Map(ids.map((id) => [id, 0]));
  for (let i = 0; i < draws; i++) {
    const id = pick();
    assert.ok(id !== undefined && counts.has(id), `picked ${id}, not a usable member`);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return ids.map((id) => counts.get(id) ?? 0);
}

describe('random strategy', () => {
  it('is uniform over the usable members, however many are down', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 60 }), fc.integer(), fc.integer(), (n, downSeed, seed) => {
        const members = Array.from({ length: n }, (_, i) => makeEntry(`p${i}`));
        const coin = seededRandom(downSeed);
        // Sometimes almost all are down, so that the fallback after failed probes is exercised too.
        const downRate = coin() < 0.5 ? coin() : 0.95;
        const down = new Set(members.filter(() => coin() < downRate).map((e) => e.record.id));
        const usable = members.filter((e) => !down.has(e.record.id)).map((e) => e.record.id);
        const s = new RandomStrategy(seededRandom(seed));
        const c = candidates(members, down);
        if (usable.length === 0) return assert.equal(s.select(c, {}), null);
        const draws = 300 * usable.length;
        const counts = histogram(() => s.select(c, {})?.record.id, usable, draws);
        if (usable.length === 1) return;
        const chi = chiSquare(
          counts,
          usable.map(() => draws / usable.length),
        );
        assert.ok(chi < chiSquareCritical(usable.length - 1), `chi-square ${chi} for ${usable.length}`);
      }),
      { numRuns: 40 },
    );
  });
});

describe('weighted strategy', () => {
  it('chooses in proportion to weight × recent success rate', () => {
    const outcome = fc.record({ ok: fc.boolean(), proxyFault: fc.boolean() });
    const member = fc.record({
      weight: fc.double({ min: 0.1, max: 50, noNaN: true }),
      history: fc.array(outcome, { maxLength: 40, size: 'max' }),
    });
    fc.assert(
      fc.property(fc.array(member, { minLength: 2, maxLength: 6 }), fc.integer(), (spec, seed) => {
        const members = spec.map((m, i) => makeEntry(`p${i}`, { weight: m.weight }));
        const s = new WeightedStrategy(seededRandom(seed));
        const expectedWeights = spec.map((m, i) => {
          const e = members[i];
          assert.ok(e);
          for (const o of m.history)
            s.record(e, { ok: o.ok, proxyFault: !o.ok && o.proxyFault, latencyMs: 10 });
          // Reference: only successes and proxy faults count, and only the last SUCCESS_WINDOW of them.
          const counted = m.history.filter((o) => o.ok || o.proxyFault).slice(-SUCCESS_WINDOW);
          const rate = (counted.filter((o) => o.ok).length + 1) / (counted.length + 1);
          assert.ok(Math.abs(s.effectiveWeight(e) - m.weight * rate) < 1e-9);
          return m.weight * rate;
        });
        const total = expectedWeights.reduce((a, b) => a + b, 0);
        const draws = 20_000;
        const ids = members.map((e) => e.record.id);
        const counts = histogram(() => s.select(candidates(members), {})?.record.id, ids, draws);
        const expected = expectedWeights.map((w) => (draws * w) / total);
        const chi = chiSquare(counts, expected);
        assert.ok(chi < chiSquareCritical(ids.length - 1), `chi-square ${chi}: ${counts} vs ${expected}`);
      }),
      { numRuns: 25 },
    );
  });

  it('a proxy that keeps failing loses its share but is still tried now and then', () => {
    const members = [makeEntry('good', { weight: 1 }), makeEntry('bad', { weight: 1 })];
    const s = new WeightedStrategy(seededRandom(3));
    const bad = members[1];
    assert.ok(bad);
    for (let i = 0; i < 30; i++) s.record(bad, { ok: false, proxyFault: true, latencyMs: 5 });
    const counts = histogram(() => s.select(candidates(members), {})?.record.id, ['good', 'bad'], 10_000);
    // bad: 1/21 against 1: about 4.5 % of picks.
    assert.ok(counts[1] !== undefined && counts[1] > 250 && counts[1] < 700, String(counts));
  });
});

describe('performance-based strategy', () => {
  function run(latencies: Record<string, number>, rounds: number, seed: number) {
    const members = Object.keys(latencies).map((id) => makeEntry(id));
    const s = new PerformanceBasedStrategy(seededRandom(seed));
    const noise = seededRandom(seed + 1);
    const counts = new Map<string, number>();
    const order: string[] = [];
    for (let i = 0; i < rounds; i++) {
      const e = s.select(candidates(members), {});
      assert.ok(e);
      order.push(e.record.id);
      counts.set(e.record.id, (counts.get(e.record.id) ?? 0) + 1);
      const base = latencies[e.record.id] ?? 0;
      s.record(e, { ok: true, proxyFault: false, latencyMs: base * (0.8 + 0.4 * noise()) });
    }
    return { counts, order, s, members };
  }

  it('tries every untested proxy early, then prefers the fast one and still explores', () => {
    fc.assert(
      fc.property(fc.integer(), fc.integer({ min: 3, max: 8 }), (seed, n) => {
        const latencies: Record<string, number> = { fast: 20 };
        for (let i = 0; i < n - 1; i++) latencies[`slow${i}`] = 200 + 100 * i;
        const { counts, order } = run(latencies, 3000, seed);
        assert.equal(new Set(order.slice(0, 2 * n)).size, n, 'every proxy measured early');
        const fast = counts.get('fast') ?? 0;
        assert.ok(fast > 3000 * 0.85, `fast chosen ${fast} times`);
        for (let i = 0; i < n - 1; i++) {
          assert.ok((counts.get(`slow${i}`) ?? 0) >= 10, `slow${i} never explored: ${[...counts]}`);
        }
      }),
      { numRuns: 15 },
    );
  });

  it('follows a proxy that becomes slow, and a failing fast proxy does not look fast', () => {
    const { s, members } = run({ a: 20, b: 100 }, 500, 11);
    const [a, b] = members;
    assert.ok(a && b);
    for (let i = 0; i < 20; i++) s.record(a, { ok: false, proxyFault: true, latencyMs: 1 });
    assert.ok((s.latencyEstimate(a) ?? 0) > FAILURE_PENALTY_MS * 0.9);
    let bPicks = 0;
    for (let i = 0; i < 1000; i++) if (s.select(candidates(members), {}) === b) bPicks++;
    assert.ok(bPicks > 900, `b picked ${bPicks}`);
    assert.equal(s.select(candidates(members, new Set(['b'])), {}), a, 'a slow proxy beats none');
  });
});
