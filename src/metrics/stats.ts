import { type AttemptRecord, type CallRecord, ownFault, safeMs } from './calls.ts';

/** GET stats, a `proxy_stats` entry. */
export interface ProxyStatsJson {
  proxy_id: string;
  requests: number;
  /** Attempts whose answer the caller got. */
  successes: number;
  /** The proxy's own faults (calls.ts ownFault); bans and the target's failures are not among them. */
  failures: number;
  /** Answers that were bans, counted apart. */
  bans: number;
  avg_latency_ms: number;
}

/** Statistics (`data` of GET stats). */
export interface StatsJson {
  requests_total: number;
  requests_per_second: number;
  avg_latency_ms: number;
  error_rate: number;
  proxy_stats: ProxyStatsJson[];
}

export interface StatsOptions {
  /** Milliseconds; a monotonic clock is best (only differences matter here). */
  readonly now: () => number;
  /**
   * When given, attempts for a proxy that no longer exists are not counted per proxy, so that a call
   * still in flight when its proxy was deleted cannot bring the deleted proxy back into `proxy_stats`.
   */
  readonly proxyExists?: (proxyId: string) => boolean;
}

interface ProxyTally {
  requests: number;
  successes: number;
  failures: number;
  bans: number;
  latencySumMs: number;
}

export const RPS_WINDOW_S = 60;

/**
 * Running totals for GET stats. Memory is a fixed 60-slot ring plus one small record per proxy, whatever
 * the traffic; every record is O(attempts).
 */
export class StatsAggregator {
  readonly #now: () => number;
  readonly #proxyExists: ((proxyId: string) => boolean) | undefined;
  /** Slot i holds the count of calls in second `#ringSecond[i]`; a stale second means the slot is empty. */
  readonly #ringCount = new Float64Array(RPS_WINDOW_S);
  readonly #ringSecond = new Float64Array(RPS_WINDOW_S).fill(Number.NEGATIVE_INFINITY);
  readonly #proxies = new Map<string, ProxyTally>();
  #calls = 0;
  #failedCalls = 0;
  #latencySumMs = 0;

  constructor(opts: StatsOptions) {
    this.#now = opts.now;
    this.#proxyExists = opts.proxyExists;
  }

  recordCall(call: CallRecord): void {
    this.#calls++;
    if (!call.ok) this.#failedCalls++;
    this.#latencySumMs += safeMs(call.latencyMs);
    this.#tick();
    for (const a of call.attempts) this.recordAttempt(a);
  }

  /** One attempt's per-proxy numbers; also for an attempt that ended after its call was reported. */
  recordAttempt(a: AttemptRecord): void {
    let t = this.#proxies.get(a.proxyId);
    if (!t) {
      if (this.#proxyExists && !this.#proxyExists(a.proxyId)) return;
      t = { requests: 0, successes: 0, failures: 0, bans: 0, latencySumMs: 0 };
      this.#proxies.set(a.proxyId, t);
    }
    t.requests++;
    // A failure is the proxy's own fault; a ban is counted apart; the target's failure is neither.
    if (a.outcome === 'success') t.successes++;
    else if (ownFault(a)) t.failures++;
    else if (a.kind === 'banned') t.bans++;
    t.latencySumMs += safeMs(a.latencyMs);
  }

  removeProxy(proxyId: string): void {
    this.#proxies.delete(proxyId);
  }

  /** Calls in the last 60 s (the current second included) divided by 60. */
  requestsPerSecond(): number {
    const current = Math.floor(this.#now() / 1000);
    let n = 0;
    for (let i = 0; i < RPS_WINDOW_S; i++) {
      const s = this.#ringSecond[i]!;
      if (s > current - RPS_WINDOW_S && s <= current) n += this.#ringCount[i]!;
    }
    return n / RPS_WINDOW_S;
  }

  /** This process's call totals (shared state sums them across instances). */
  totals(): { calls: number; failed: number; latencySumMs: number; rps: number } {
    return {
      calls: this.#calls,
      failed: this.#failedCalls,
      latencySumMs: this.#latencySumMs,
      rps: this.requestsPerSecond(),
    };
  }

  snapshot(): StatsJson {
    const proxy_stats: ProxyStatsJson[] = [];
    for (const [proxy_id, t] of this.#proxies) {
      proxy_stats.push({
        proxy_id,
        requests: t.requests,
        successes: t.successes,
        failures: t.failures,
        bans: t.bans,
        avg_latency_ms: t.requests === 0 ? 0 : t.latencySumMs / t.requests,
      });
    }
    return {
      requests_total: this.#calls,
      requests_per_second: this.requestsPerSecond(),
      avg_latency_ms: this.#calls === 0 ? 0 : this.#latencySumMs / this.#calls,
      error_rate: this.#calls === 0 ? 0 : this.#failedCalls / this.#calls,
      proxy_stats,
    };
  }

  #tick(): void {
    const second = Math.floor(this.#now() / 1000);
    const slot = ((second % RPS_WINDOW_S) + RPS_WINDOW_S) % RPS_WINDOW_S;
    if (this.#ringSecond[slot] !== second) {
      this.#ringSecond[slot] = second;
      this.#ringCount[slot] = 0;
    }
    this.#ringCount[slot] = (this.#ringCount[slot] ?? 0) + 1;
  }
}
