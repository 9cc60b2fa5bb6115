import type { ProxyEntry } from '../pool/pool.ts';
import { pickRandom, usable } from './shared.ts';
import type { AttemptOutcome, Candidates, SelectionRequest, Strategy } from './types.ts';

/** How many recent outcomes make up a proxy's success rate. */
export const SUCCESS_WINDOW = 20;

/** A proxy's last SUCCESS_WINDOW outcomes, as a ring. */
class RecentOutcomes {
  private readonly ring: boolean[] = [];
  private next = 0;
  private successes = 0;

  push(ok: boolean): void {
    if (this.ring.length < SUCCESS_WINDOW) {
      this.ring.push(ok);
    } else {
      if (this.ring[this.next]) this.successes--;
      this.ring[this.next] = ok;
      this.next = (this.next + 1) % SUCCESS_WINDOW;
    }
    if (ok) this.successes++;
  }

  /**
   * (successes + 1) / (outcomes + 1): an untried proxy counts as fully successful, and one that failed
   * every recent attempt keeps a small share, so it is tried now and then and can earn its way back.
   */
  rate(): number {
    return (this.successes + 1) / (this.ring.length + 1);
  }
}

/**
 * Random, with each usable member's chance proportional to `weight × recent success rate`. Only
 * outcomes that say something about the proxy count: successes, and failures that were the proxy's
 * fault (a target answering 503 through a working proxy is not held against it).
 *
 * Exact proportional choice needs every usable member's current weight, so this is one pass over the
 * members per call; the selection-cost bound (a pick without a scan of the pool) applies to round-robin,
 * random and least-used.
 */
export class WeightedStrategy implements Strategy {
  readonly name = 'weighted' as const;
  private readonly random: () => number;
  private readonly recent = new WeakMap<ProxyEntry, RecentOutcomes>();
  private readonly scratchEntries: ProxyEntry[] = [];
  private scratchWeights = new Float64Array(64);

  constructor(random: () => number) {
    this.random = random;
  }

  /** The weight this strategy gives a member now (exposed for tests and diagnostics). */
  effectiveWeight(e: ProxyEntry): number {
    const w = e.record.weight;
    const base = Number.isFinite(w) && w > 0 ? w : 0;
    return base * (this.recent.get(e)?.rate() ?? 1);
  }

  select(c: Candidates, req: SelectionRequest): ProxyEntry | null {
    const ok = usable(c, req);
    const entries = this.scratchEntries;
    entries.length = 0;
    if (this.scratchWeights.length < c.members.length)
      this.scratchWeights = new Float64Array(c.members.length);
    const weights = this.scratchWeights;
    let total = 0;
    for (const e of c.members) {
      if (!ok(e)) continue;
      const w = this.effectiveWeight(e);
      weights[entries.length] = w;
      entries.push(e);
      total += w;
    }
    const chosen = total > 0 && Number.isFinite(total) ? this.draw(entries, weights, total) : null;
    // Without usable weights (cannot happen with validated weights), every usable member is equal.
    const result = chosen ?? pickRandom(entries, () => true, this.random);
    entries.length = 0;
    return result;
  }

  record(e: ProxyEntry, outcome: AttemptOutcome): void {
    if (!outcome.ok && !outcome.proxyFault) return;
    let r = this.recent.get(e);
    if (!r) {
      r = new RecentOutcomes();
      this.recent.set(e, r);
    }
    r.push(outcome.ok);
  }

  private draw(entries: readonly ProxyEntry[], weights: Float64Array, total: number): ProxyEntry | null {
    let r = this.random() * total;
    for (let i = 0; i < entries.length; i++) {
      r -= weights[i] ?? 0;
      if (r < 0) return entries[i] ?? null;
    }
    // Rounding can leave r at a hair above 0: the last member with weight takes it.
    for (let i = entries.length - 1; i >= 0; i--) if ((weights[i] ?? 0) > 0) return entries[i] ?? null;
    return null;
  }
}
