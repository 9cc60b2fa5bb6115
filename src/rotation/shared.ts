import type { ProxyEntry } from '../pool/pool.ts';
import type { Candidates, SelectionRequest } from './types.ts';

export type Usable = (e: ProxyEntry) => boolean;

/** May `e` be returned for this request? The exclusion check goes first: a set lookup is cheaper. */
export function usable(c: Candidates, req: SelectionRequest): Usable {
  const ex = req.exclude;
  if (ex === undefined || ex.size === 0) return (e) => c.eligible(e);
  return (e) => !ex.has(e.record.id) && c.eligible(e);
}

/** An index in [0, n) from a random number in [0, 1), safe against a source that returns 1. */
export function randomIndex(random: () => number, n: number): number {
  return Math.min(n - 1, Math.floor(random() * n));
}

const RANDOM_PROBES = 16;

/**
 * A uniformly random usable member. Random probes find one in O(1) expected time while most members
 * are usable; after a bounded number of misses it collects the usable ones and picks among them. Both
 * paths are uniform over the usable members, so their mixture is too.
 */
export function pickRandom(list: readonly ProxyEntry[], ok: Usable, random: () => number): ProxyEntry | null {
  const n = list.length;
  if (n === 0) return null;
  for (let i = 0; i < RANDOM_PROBES; i++) {
    const e = list[randomIndex(random, n)];
    if (e !== undefined && ok(e)) return e;
  }
  const usableOnes = list.filter(ok);
  if (usableOnes.length === 0) return null;
  return usableOnes[randomIndex(random, usableOnes.length)] ?? null;
}

/**
 * A round-robin cursor over a list that may shrink (splice) or grow (push) between calls. It remembers
 * the last pick and where it was, so a removal before the cursor does not make it skip a member.
 */
export class RoundRobinCursor {
  private last: ProxyEntry | null = null;
  private lastIdx = -1;

  next(list: readonly ProxyEntry[], ok: Usable): ProxyEntry | null {
    const n = list.length;
    if (n === 0) return null;
    const start = this.startIndex(list);
    for (let i = 0; i < n; i++) {
      const idx = (start + i) % n;
      const e = list[idx];
      if (e !== undefined && ok(e)) {
        this.last = e;
        this.lastIdx = idx;
        return e;
      }
    }
    return null;
  }

  private startIndex(list: readonly ProxyEntry[]): number {
    const n = list.length;
    const last = this.last;
    if (last === null) return 0;
    if (list[this.lastIdx] === last) return (this.lastIdx + 1) % n;
    // Something before the last pick was removed (the common case: one step left), or it moved further.
    if (list[this.lastIdx - 1] === last) return this.lastIdx % n;
    const idx = list.indexOf(last);
    if (idx !== -1) return (idx + 1) % n;
    // The last pick itself was removed: its successor slid into its slot.
    return this.lastIdx < n ? Math.max(0, this.lastIdx) : 0;
  }
}

/**
 * Tracks whether an index a strategy keeps still describes `c.members`. Strategies are created at any
 * time (a `PUT config` switches them), so they build their index lazily from the members on first use;
 * afterwards `added`/`removed` keep it current. A different array or a different size means a
 * notification was missed, and the index is rebuilt rather than trusted.
 */
export class MemberSync {
  private source: readonly ProxyEntry[] | null = null;

  /** True when the index must be rebuilt from `members`. */
  stale(members: readonly ProxyEntry[], indexedCount: number): boolean {
    return members !== this.source || members.length !== indexedCount;
  }

  synced(members: readonly ProxyEntry[]): void {
    this.source = members;
  }

  /** Before the first build, notifications are ignored: the build will read the members anyway. */
  get built(): boolean {
    return this.source !== null;
  }
}
