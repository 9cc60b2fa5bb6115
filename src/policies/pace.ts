/**
 * The two paces a rule can set on a host, both kept per instance (the API and docs/decisions.md say so):
 *
 * - HostPacer (`host_rate_limit`): requests to one host across the pool, spaced evenly. A call reserves
 *   the next free start time (a virtual schedule, GCRA with no burst) and waits for it within its
 *   deadline; when that start lies past its deadline nothing is reserved and the call is refused.
 * - LastStarts (`min_interval_ms`): when a request last started through a proxy to a host, which the one
 *   eligibility predicate (outbound/eligibility.ts) reads: a proxy is not eligible for that host again
 *   before the rule's interval has passed.
 *
 * Both tables are bounded: entries in the past are dropped first, then the oldest.
 */

const MAX_KEYS = 100_000;

export type Reservation =
  | { readonly ok: true; readonly waitMs: number }
  | { readonly ok: false; readonly retryAfterMs: number };

export class HostPacer {
  /** key (rule name, host) ──▶ the earliest start time of the next request (ms, monotonic). */
  readonly #next = new Map<string, number>();

  /** Reserves the next start for `key` unless it lies more than `maxWaitMs` after `now`. */
  reserve(key: string, intervalMs: number, now: number, maxWaitMs: number): Reservation {
    const at = Math.max(now, this.#next.get(key) ?? now);
    const waitMs = at - now;
    if (waitMs > maxWaitMs) return { ok: false, retryAfterMs: waitMs };
    this.#next.delete(key);
    this.#next.set(key, at + intervalMs);
    if (this.#next.size > MAX_KEYS) prune(this.#next, now);
    return { ok: true, waitMs };
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
