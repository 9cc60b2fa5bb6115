import {
  type AttemptRecord,
  type CallRecord,
  ownFault,
  retriesOf,
  safeMs,
  successfulAttempt,
} from './calls.ts';

/** `summary` of GET /metrics/retry. */
export interface RetrySummaryJson {
  total_retries: number;
  success_by_attempt: Record<string, number>;
  circuit_breaker_events_count: number;
  /** Bans (a target refusing a proxy's address) within the retention window, beside breaker events. */
  ban_events_count: number;
  retention_hours: number;
}

/** `timeseries` item of GET /metrics/retry: one hour. */
export interface RetryHourJson {
  /** ISO start of the hour (UTC). */
  timestamp: string;
  total_requests: number;
  total_retries: number;
  success_rate: number;
  /** Seconds. */
  avg_latency: number;
}

/** `by_proxy` value of GET /metrics/retry. */
export interface RetryProxyJson {
  proxy_id: string;
  total_attempts: number;
  success_count: number;
  failure_count: number;
  /** Seconds. */
  avg_latency: number;
  circuit_breaker_opens: number;
  /** Bans of this proxy by target sites. */
  bans: number;
}

/** The whole `data` of GET /metrics/retry. */
export interface RetryMetricsJson {
  summary: RetrySummaryJson;
  timeseries: RetryHourJson[];
  by_proxy: Record<string, RetryProxyJson>;
}

export interface RetryMetricsOptions {
  /** Wall clock, epoch ms: buckets are calendar hours shown to people. */
  readonly now: () => number;
  /** ROTA_METRICS_RETENTION_HOURS (1-720). */
  readonly retentionHours: number;
  /** Breaker state-change events currently kept by the breakers (`circuit_breaker_events_count`). */
  readonly breakerEventsCount: () => number;
  /** When given, records for a proxy that no longer exists are dropped (a call in flight at deletion). */
  readonly proxyExists?: (proxyId: string) => boolean;
}

export const HOUR_MS = 3_600_000;
export const MAX_HOURS = 720;

interface ProxyHour {
  attempts: number;
  successes: number;
  /** The proxy's own faults (calls.ts ownFault): bans are counted apart. */
  failures: number;
  latencySumMs: number;
  breakerOpens: number;
  bans: number;
}

interface HourBucket {
  readonly start: number;
  calls: number;
  okCalls: number;
  retries: number;
  latencySumMs: number;
  /** Attempt number → successful calls; attempt numbers are bounded by the policy's max_attempts. */
  readonly successByAttempt: Map<number, number>;
  readonly proxies: Map<string, ProxyHour>;
}

/**
 * Retry statistics in hourly buckets. Only the last `retentionHours` buckets are kept (pruned on write),
 * so memory is bounded by hours × proxies whatever the traffic.
 */
export class RetryMetrics {
  readonly retentionHours: number;
  readonly #now: () => number;
  readonly #breakerEventsCount: () => number;
  readonly #proxyExists: ((proxyId: string) => boolean) | undefined;
  readonly #buckets = new Map<number, HourBucket>();
  #lastPrunedHour = Number.NaN;

  constructor(opts: RetryMetricsOptions) {
    this.retentionHours = clampHours(opts.retentionHours);
    this.#now = opts.now;
    this.#breakerEventsCount = opts.breakerEventsCount;
    this.#proxyExists = opts.proxyExists;
  }

  recordCall(call: CallRecord): void {
    const b = this.#current();
    b.calls++;
    b.retries += retriesOf(call);
    b.latencySumMs += safeMs(call.latencyMs);
    const on = successfulAttempt(call);
    if (on !== null) {
      b.okCalls++;
      b.successByAttempt.set(on, (b.successByAttempt.get(on) ?? 0) + 1);
    }
    for (const a of call.attempts) this.#attempt(b, a);
  }

  /**
   * One attempt's per-proxy numbers, for an attempt that ended after its call was reported (a hedge
   * overtook it); recordCall covers the call's own attempts.
   */
  recordAttempt(a: AttemptRecord): void {
    this.#attempt(this.#current(), a);
  }

  #attempt(b: HourBucket, a: AttemptRecord): void {
    const p = this.#proxyHour(b, a.proxyId);
    if (!p) return;
    p.attempts++;
    if (a.outcome === 'success') p.successes++;
    else if (ownFault(a)) p.failures++;
    p.latencySumMs += safeMs(a.latencyMs);
  }

  recordBreakerOpen(proxyId: string): void {
    const p = this.#proxyHour(this.#current(), proxyId);
    if (p) p.breakerOpens++;
  }

  recordBan(proxyId: string): void {
    const p = this.#proxyHour(this.#current(), proxyId);
    if (p) p.bans++;
  }

  /** Drops every hourly record of the proxy. */
  removeProxy(proxyId: string): void {
    for (const b of this.#buckets.values()) b.proxies.delete(proxyId);
  }

  /** Over the whole retention window. */
  summary(): RetrySummaryJson {
    let total_retries = 0;
    let bans = 0;
    const byAttempt = new Map<number, number>();
    for (const b of this.#window(this.retentionHours)) {
      total_retries += b.retries;
      for (const p of b.proxies.values()) bans += p.bans;
      for (const [n, c] of b.successByAttempt) byAttempt.set(n, (byAttempt.get(n) ?? 0) + c);
    }
    const success_by_attempt: Record<string, number> = {};
    for (const n of [...byAttempt.keys()].sort((x, y) => x - y))
      success_by_attempt[String(n)] = byAttempt.get(n)!;
    return {
      total_retries,
      success_by_attempt,
      circuit_breaker_events_count: this.#breakerEventsCount(),
      ban_events_count: bans,
      retention_hours: this.retentionHours,
    };
  }

  /** Hours that saw at least one call, oldest first, within the last `hours` hours (current one included). */
  timeseries(hours: number): RetryHourJson[] {
    const out: RetryHourJson[] = [];
    for (const b of this.#window(hours)) {
      if (b.calls === 0) continue;
      out.push({
        timestamp: new Date(b.start).toISOString(),
        total_requests: b.calls,
        total_retries: b.retries,
        success_rate: b.okCalls / b.calls,
        avg_latency: b.latencySumMs / b.calls / 1000,
      });
    }
    return out;
  }

  byProxy(hours: number): Record<string, RetryProxyJson> {
    const sums = new Map<string, ProxyHour>();
    for (const b of this.#window(hours)) {
      for (const [id, p] of b.proxies) {
        const s = sums.get(id) ?? {
          attempts: 0,
          successes: 0,
          failures: 0,
          latencySumMs: 0,
          breakerOpens: 0,
          bans: 0,
        };
        s.attempts += p.attempts;
        s.successes += p.successes;
        s.failures += p.failures;
        s.latencySumMs += p.latencySumMs;
        s.breakerOpens += p.breakerOpens;
        s.bans += p.bans;
        sums.set(id, s);
      }
    }
    const out: Record<string, RetryProxyJson> = {};
    for (const [proxy_id, s] of sums) {
      out[proxy_id] = {
        proxy_id,
        total_attempts: s.attempts,
        success_count: s.successes,
        failure_count: s.failures,
        avg_latency: s.attempts === 0 ? 0 : s.latencySumMs / s.attempts / 1000,
        circuit_breaker_opens: s.breakerOpens,
        bans: s.bans,
      };
    }
    return out;
  }

  /** `data` for GET /metrics/retry. */
  report(hours: number): RetryMetricsJson {
    return { summary: this.summary(), timeseries: this.timeseries(hours), by_proxy: this.byProxy(hours) };
  }

  /** Number of hourly buckets held (for tests and the memory bound). */
  get bucketCount(): number {
    return this.#buckets.size;
  }

  /** Buckets of the last `hours` hours, oldest first; never beyond retention, never in the future. */
  #window(hours: number): HourBucket[] {
    const nowHour = hourOf(this.#now());
    const from = nowHour - (Math.min(clampHours(hours), this.retentionHours) - 1) * HOUR_MS;
    const out: HourBucket[] = [];
    for (const b of this.#buckets.values()) if (b.start >= from && b.start <= nowHour) out.push(b);
    return out.sort((x, y) => x.start - y.start);
  }

  #current(): HourBucket {
    const start = hourOf(this.#now());
    if (start !== this.#lastPrunedHour) this.#prune(start);
    let b = this.#buckets.get(start);
    if (!b) {
      b = {
        start,
        calls: 0,
        okCalls: 0,
        retries: 0,
        latencySumMs: 0,
        successByAttempt: new Map(),
        proxies: new Map(),
      };
      this.#buckets.set(start, b);
    }
    return b;
  }

  /** Keeps only [now - retention + 1, now]: a clock stepped back cannot leave stray future buckets. */
  #prune(nowHour: number): void {
    this.#lastPrunedHour = nowHour;
    const oldest = nowHour - (this.retentionHours - 1) * HOUR_MS;
    for (const start of this.#buckets.keys()) {
      if (start < oldest || start > nowHour) this.#buckets.delete(start);
    }
  }

  #proxyHour(b: HourBucket, proxyId: string): ProxyHour | undefined {
    let p = b.proxies.get(proxyId);
    if (p) return p;
    if (this.#proxyExists && !this.#proxyExists(proxyId)) return undefined;
    p = { attempts: 0, successes: 0, failures: 0, latencySumMs: 0, breakerOpens: 0, bans: 0 };
    b.proxies.set(proxyId, p);
    return p;
  }
}

function hourOf(ms: number): number {
  return Math.floor(ms / HOUR_MS) * HOUR_MS;
}

function clampHours(hours: number): number {
  if (!Number.isFinite(hours)) return 1;
  return Math.min(MAX_HOURS, Math.max(1, Math.floor(hours)));
}
