/**
 * The dashboard's live numbers: per-second samples of proxied calls (requests/s, errors/s, p50 and p95
 * latency) over the last 15 minutes, and each proxy's median latency over its recent successful attempts
 * (its success rate is the pool's own counters). Fed from the same CallRecord as the other aggregators
 * (services.ts `onCall`).
 *
 * Cost: O(attempts) per call with no allocation; latency quantiles come from a fixed log-scale histogram
 * of the current second (5% wide buckets), summarised once when the second ends. Memory is fixed for the
 * series (900 slots) plus about 100 bytes for each proxy that has carried traffic.
 */
import { type CallRecord, safeMs } from './calls.ts';

export const SERIES_SECONDS = 900;
/** Recent successful attempts kept per proxy for its median latency. */
export const PROXY_RECENT = 16;

const MIN_MS = 0.1;
const GROWTH = 1.05;
const BUCKETS = 340; // 0.1 ms · 1.05^340 ≈ 16 min: every deadline fits
const LOG_GROWTH = Math.log(GROWTH);

function bucketOf(ms: number): number {
  if (ms <= MIN_MS) return 0;
  const i = Math.floor(Math.log(ms / MIN_MS) / LOG_GROWTH);
  return i >= BUCKETS ? BUCKETS - 1 : i;
}

/** The geometric middle of a bucket: at most 2.5% off any value in it. */
function bucketValue(i: number): number {
  return MIN_MS * GROWTH ** (i + 0.5);
}

/** Samples after a given second, oldest first; latencies are null for a second with no call. */
export interface SeriesSamples {
  interval_s: number;
  /** Epoch seconds of each sample. */
  t: number[];
  requests: number[];
  errors: number[];
  p50_ms: (number | null)[];
  p95_ms: (number | null)[];
}

interface ProxyTally {
  readonly recent: Float32Array;
  filled: number;
  next: number;
  /** Cached median; NaN when it must be computed again. */
  median: number;
}

export interface PoolLike {
  get(id: string): unknown;
  listen(listener: { removed?(entry: { record: { id: string } }): void }): void;
}

export interface CallSeriesOptions {
  /** Epoch ms (wall clock): samples are shown on a time axis. */
  readonly now: () => number;
  /** When given, tallies follow the pool: none for an unknown proxy, dropped when a proxy is removed. */
  readonly pool?: PoolLike;
}

export class CallSeries {
  readonly #now: () => number;
  readonly #pool: PoolLike | undefined;
  // The ring of finished seconds.
  readonly #t = new Float64Array(SERIES_SECONDS);
  readonly #req = new Uint32Array(SERIES_SECONDS);
  readonly #err = new Uint32Array(SERIES_SECONDS);
  readonly #p50 = new Float32Array(SERIES_SECONDS);
  readonly #p95 = new Float32Array(SERIES_SECONDS);
  #head = 0;
  #size = 0;
  // The second being counted.
  #second = Number.NaN;
  #count = 0;
  #errors = 0;
  readonly #hist = new Uint32Array(BUCKETS);
  readonly #proxies = new Map<string, ProxyTally>();
  readonly #scratch = new Float32Array(PROXY_RECENT);

  constructor(opts: CallSeriesOptions) {
    this.#now = opts.now;
    this.#pool = opts.pool;
    opts.pool?.listen({ removed: (e) => this.#proxies.delete(e.record.id) });
  }

  recordCall(call: CallRecord): void {
    this.#advance();
    this.#count++;
    if (!call.ok) this.#errors++;
    this.#hist[bucketOf(safeMs(call.latencyMs))]!++;
    for (const a of call.attempts) {
      if (a.outcome !== 'success') continue;
      const tally = this.#tally(a.proxyId);
      if (!tally) continue;
      tally.recent[tally.next] = safeMs(a.latencyMs);
      tally.next = (tally.next + 1) % PROXY_RECENT;
      if (tally.filled < PROXY_RECENT) tally.filled++;
      tally.median = Number.NaN;
    }
  }

  /** Finished seconds later than `sinceS` (epoch seconds), at most the last 15 minutes. */
  samples(sinceS = 0): SeriesSamples {
    this.#advance();
    const out: SeriesSamples = { interval_s: 1, t: [], requests: [], errors: [], p50_ms: [], p95_ms: [] };
    for (let k = 0; k < this.#size; k++) {
      const i = (this.#head - this.#size + k + SERIES_SECONDS) % SERIES_SECONDS;
      const t = this.#t[i]!;
      if (t <= sinceS) continue;
      out.t.push(t);
      out.requests.push(this.#req[i]!);
      out.errors.push(this.#err[i]!);
      out.p50_ms.push(rounded(this.#p50[i]!));
      out.p95_ms.push(rounded(this.#p95[i]!));
    }
    return out;
  }

  /** Median latency (ms) of a proxy's last 16 successful attempts; null before its first success. */
  p50(proxyId: string): number | null {
    const t = this.#proxies.get(proxyId);
    return t ? this.#median(t) : null;
  }

  #tally(proxyId: string): ProxyTally | undefined {
    let t = this.#proxies.get(proxyId);
    if (t) return t;
    if (this.#pool && this.#pool.get(proxyId) === undefined) return undefined;
    t = {
      recent: new Float32Array(PROXY_RECENT),
      filled: 0,
      next: 0,
      median: Number.NaN,
    };
    this.#proxies.set(proxyId, t);
    return t;
  }

  #median(t: ProxyTally): number | null {
    if (t.filled === 0) return null;
    if (Number.isNaN(t.median)) {
      const s = this.#scratch.subarray(0, t.filled);
      s.set(t.recent.subarray(0, t.filled));
      s.sort();
      const mid = t.filled >> 1;
      t.median = t.filled % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
    }
    return rounded(t.median);
  }

  /** Closes the seconds that have ended (empty ones included) and starts counting the current one. */
  #advance(): void {
    const now = Math.floor(this.#now() / 1000);
    if (Number.isNaN(this.#second)) {
      this.#second = now;
      return;
    }
    // A wall clock stepped back keeps counting into the current second rather than rewrite history.
    if (now <= this.#second) return;
    this.#close();
    const gap = Math.min(now - this.#second - 1, SERIES_SECONDS);
    for (let s = now - gap; s < now; s++) this.#push(s, 0, 0, Number.NaN, Number.NaN);
    this.#second = now;
  }

  #close(): void {
    const n = this.#count;
    let p50 = Number.NaN;
    let p95 = Number.NaN;
    if (n > 0) {
      const at50 = Math.ceil(n * 0.5);
      const at95 = Math.ceil(n * 0.95);
      let seen = 0;
      for (let i = 0; i < BUCKETS && Number.isNaN(p95); i++) {
        seen += this.#hist[i]!;
        if (Number.isNaN(p50) && seen >= at50) p50 = bucketValue(i);
        if (seen >= at95) p95 = bucketValue(i);
      }
      this.#hist.fill(0);
    }
    this.#push(this.#second, n, this.#errors, p50, p95);
    this.#count = 0;
    this.#errors = 0;
  }

  #push(t: number, req: number, err: number, p50: number, p95: number): void {
    const i = this.#head;
    this.#t[i] = t;
    this.#req[i] = req;
    this.#err[i] = err;
    this.#p50[i] = p50;
    this.#p95[i] = p95;
    this.#head = (i + 1) % SERIES_SECONDS;
    if (this.#size < SERIES_SECONDS) this.#size++;
  }
}

function rounded(ms: number): number | null {
  return Number.isNaN(ms) ? null : Math.round(ms * 10) / 10;
}
