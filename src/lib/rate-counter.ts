/**
 * Fixed-window counters, one per key, shared by every door that limits a client: the API's rate limiter
 * (through the @fastify/rate-limit store adapter in http/rate-limit.ts) and the failed-auth budget
 * (http/auth-budget.ts) of the API and both listeners. One counter per key whatever the door, so that a
 * client cannot spend its limit once per door (a key guessed through the proxy listener costs the same as
 * through the API).
 *
 * This is the in-process implementation; a shared one (several instances) implements the same interface.
 */

export interface Count {
  /** Hits in the current window, this one included. */
  readonly count: number;
  /** Milliseconds until the window ends. */
  readonly ttlMs: number;
}

/**
 * In-process counters answer at once; shared ones (Redis) answer with a promise, one round trip each.
 * Callers handle both without paying a microtask for the local case.
 */
export interface RateCounter {
  /** Counts one hit for `key` in a window of `windowMs`. */
  incr(key: string, windowMs: number): Count | Promise<Count>;
  /** The current count without counting (0 when the window is over). */
  peek(key: string, windowMs: number): Count | Promise<Count>;
  /**
   * Check and count in one atomic step: `over` (nothing counted) when the count is already at `limit`,
   * else `under` after counting `cost` (0: only check). However many calls are in flight together, at
   * most `limit` units are ever taken in a window.
   */
  take(key: string, limit: number, windowMs: number, cost: 0 | 1): Taken | Promise<Taken>;
}

/** What take() decided. `under`: the count after this call; `over`: refused, nothing counted. */
export type Taken =
  | { readonly type: 'under'; readonly count: number; readonly ttlMs: number }
  | { readonly type: 'over'; readonly count: number; readonly ttlMs: number };

interface Window {
  count: number;
  startedAt: number;
}

/** Bounded: past `max` keys the least recently counted is forgotten (a flood of addresses cannot grow it). */
export class MemoryRateCounter implements RateCounter {
  readonly #windows = new Map<string, Window>();
  readonly #max: number;
  readonly #now: () => number;

  constructor(opts: { max?: number; now?: () => number } = {}) {
    this.#max = opts.max ?? 50_000;
    this.#now = opts.now ?? Date.now;
  }

  incr(key: string, windowMs: number): Count {
    const now = this.#now();
    const w = this.#count(key, windowMs, now);
    return { count: w.count, ttlMs: w.startedAt + windowMs - now };
  }

  peek(key: string, windowMs: number): Count {
    const now = this.#now();
    const w = this.#windows.get(key);
    if (w === undefined || w.startedAt + windowMs <= now) return { count: 0, ttlMs: 0 };
    return { count: w.count, ttlMs: w.startedAt + windowMs - now };
  }

  /** Synchronous, so nothing can come between the check and the count. */
  take(key: string, limit: number, windowMs: number, cost: 0 | 1): Taken {
    const now = this.#now();
    const w = this.#windows.get(key);
    const live = w !== undefined && w.startedAt + windowMs > now;
    const count = live ? w.count : 0;
    const ttlMs = live ? w.startedAt + windowMs - now : windowMs;
    if (count >= limit) return { type: 'over', count, ttlMs };
    if (cost === 0) return { type: 'under', count, ttlMs };
    const after = this.#count(key, windowMs, now);
    return { type: 'under', count: after.count, ttlMs: after.startedAt + windowMs - now };
  }

  #count(key: string, windowMs: number, now: number): Window {
    let w = this.#windows.get(key);
    if (w === undefined || w.startedAt + windowMs <= now) w = { count: 0, startedAt: now };
    w.count++;
    // Re-inserted so that map order is least recently counted first.
    this.#windows.delete(key);
    this.#windows.set(key, w);
    if (this.#windows.size > this.#max) {
      const oldest = this.#windows.keys().next();
      if (!oldest.done) this.#windows.delete(oldest.value);
    }
    return w;
  }
}
