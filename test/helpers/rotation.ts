import type { ProxyEntry } from '../../src/pool/pool.ts';
import type { Candidates } from '../../src/rotation/types.ts';

/** A seeded PRNG (mulberry32) in [0, 1): reproducible "randomness" for strategy tests. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function makeEntry(
  id: string,
  o: { weight?: number; country?: string | null; inFlight?: number; total?: number } = {},
): ProxyEntry {
  return {
    record: {
      id,
      protocol: 'http',
      host: `10.0.0.${id.length}`,
      port: 8080,
      username: null,
      password: null,
      weight: o.weight ?? 1,
      country: o.country ?? null,
      tags: [],
      createdAt: 0,
      updatedAt: 0,
    },
    url: `http://proxy-${id}:8080`,
    country: o.country ?? null,
    exit: null,
    health: 'unknown',
    consecutiveFailures: 0,
    inFlight: o.inFlight ?? 0,
    stats: { total: o.total ?? 0, success: 0, failed: 0, latencySumMs: 0 },
  };
}

/** Candidates over `members` where the ids in `down` are not eligible (their breakers refuse). */
export function candidates(
  members: readonly ProxyEntry[],
  down: ReadonlySet<string> = new Set(),
): Candidates {
  return { members, eligible: (e) => !down.has(e.record.id) };
}

/** Chi-square statistic of observed counts against expected counts. */
export function chiSquare(observed: readonly number[], expected: readonly number[]): number {
  let sum = 0;
  for (let i = 0; i < observed.length; i++) {
    const exp = expected[i] ?? 0;
    if (exp > 0) sum += ((observed[i] ?? 0) - exp) ** 2 / exp;
  }
  return sum;
}

/**
 * Chi-square critical value for `df` degrees of freedom at about p = 1e-6 (Wilson–Hilferty). So strict
 * a bound never trips on an honest sampler, yet a biased one misses it by orders of magnitude at the
 * sample sizes the tests use.
 */
export function chiSquareCritical(df: number): number {
  const z = 4.75;
  const k = 2 / (9 * df);
  return df * (1 - k + z * Math.sqrt(k)) ** 3;
}
