/**
 * The two paces a rule can set on a host, both kept per instance (the API and docs/decisions.md say so):
 *
 * - HostPacer (`host_rate_limit`): requests to one host across the pool, spaced evenly. A call reserves
 *   the next free start time (a virtual schedule, GCRA with no burst) and waits for it within its
 *   deadline; when that start lies past its deadline nothing is reserved and the call is refused. A
 *   caller that goes away while it waits gives its start back (release), so a crowd of clients that
 *   connect, queue and leave does not hold the host's schedule shut for the callers after them.
 * - LastStarts (`min_interval_ms`): when a request last started through a proxy to a host, which the one
 *   eligibility predicate (outbound/eligibility.ts) reads: a proxy is not eligible for that host again
 *   before the rule's interval has passed.
 *
 * Both tables are bounded: entries in the past are dropped first, then the oldest.
 */

const MAX_KEYS = 100_000;

/** A reserved start: `at`, and the next free start it left (`end`, `at` plus the interval). */
export interface Slot {
  readonly key: string;
  readonly at: number;
  readonly end: number;
}

export type Reservation =
  | { readonly ok: true; readonly waitMs: number; readonly slot: Slot }
  | { readonly ok: false; readonly retryAfterMs: number };

export class HostPacer {
  /** key (rule name, host) ──▶ the earliest start time of the next request (ms, monotonic). */
  readonly #next = new Map<string, number>();
  /** key ──▶ starts given back that are not the last one yet: their end ──▶ their start. */
  readonly #returned = new Map<string, Map<number, number>>();

  /** Reserves the next start for `key` unless it lies more than `maxWaitMs` after `now`. */
  reserve(key: string, intervalMs: number, now: number, maxWaitMs: number): Reservation {
    const next = this.#next.get(key) ?? now;
    // Caught up: every start given back lies in the past, where it holds nobody back.
    if (next <= now && this.#returned.size > 0) this.#returned.delete(key);
    const at = Math.max(now, next);
    const waitMs = at - now;
    if (waitMs > maxWaitMs) return { ok: false, retryAfterMs: waitMs };
    const end = at + intervalMs;
    this.#next.delete(key);
    this.#next.set(key, end);
    if (this.#next.size > MAX_KEYS) this.#prune(now);
    return { ok: true, waitMs, slot: { key, at, end } };
  }

  /**
   * Gives a start back that will not be used (its caller went away while it waited). The schedule moves
   * back over it when it is the last one reserved, and over every start given back before it that thereby
   * becomes the last; a start given back in the middle waits for the ones after it.
   */
  release(slot: Slot): void {
    let next = this.#next.get(slot.key);
    if (next === undefined) return;
    let returned = this.#returned.get(slot.key);
    if (next !== slot.end) {
      if (slot.end < next) {
        if (returned === undefined) {
          returned = new Map();
          this.#returned.set(slot.key, returned);
        }
        returned.set(slot.end, slot.at);
      }
      return;
    }
    next = slot.at;
    for (let at = returned?.get(next); at !== undefined; at = returned?.get(next)) {
      returned?.delete(next);
      next = at;
    }
    if (returned?.size === 0) this.#returned.delete(slot.key);
    this.#next.set(slot.key, next);
  }

  #prune(now: number): void {
    prune(this.#next, now);
    for (const key of this.#returned.keys()) if (!this.#next.has(key)) this.#returned.delete(key);
  }

  get size(): number {
    return this.#next.size;
  }
}

export class LastStarts {
  /** `${host}\n${proxyId}` ──▶ when a request last started through that proxy to that host (monotonic). */
  readonly #at = new Map<string, number>();

  started(host: string, proxyId: string, now: number): void {
    const key = `${host}\n${proxyId}`;
    this.#at.delete(key);
    this.#at.set(key, now);
    // Starts older than the longest interval a rule may set (an hour) hold nobody back any more.
    if (this.#at.size > MAX_KEYS) prune(this.#at, now - 3_600_000);
  }

  /** When the proxy may next start a request to the host, given the interval (0: now). */
  freeAt(host: string, proxyId: string, intervalMs: number): number {
    const last = this.#at.get(`${host}\n${proxyId}`);
    return last === undefined ? 0 : last + intervalMs;
  }

  get size(): number {
    return this.#at.size;
  }
}

/** Drops entries whose time is before `before`; if none was, the oldest quarter (insertion order). */
function prune(m: Map<string, number>, before: number): void {
  const size = m.size;
  for (const [k, t] of m) if (t < before) m.delete(k);
  if (m.size < size) return;
  let n = Math.ceil(size / 4);
  for (const k of m.keys()) {
    if (n-- <= 0) break;
    m.delete(k);
  }
}
