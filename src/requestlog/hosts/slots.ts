/**
 * Figures of one host (or one proxy for a host) over the last hour, in twelve 5-minute slots: calls,
 * successes, bans, failures, bytes and a latency histogram. Fixed size (two typed arrays), whatever the
 * traffic; a slot is cleared when its 5 minutes come round again.
 */

export const SLOT_MS = 5 * 60_000;
export const SLOTS = 12;
/** Latency buckets: bucket k holds latencies up to 1.5^k ms; the last one everything longer. */
const BUCKETS = 29;
const GROWTH = 1.5;
const LOG_GROWTH = Math.log(GROWTH);
const REQ = 0;
const OK = 1;
const BAN = 2;
const FAIL = 3;
const COUNTS = 4;
const STRIDE = COUNTS + BUCKETS;

export interface Totals {
  requests: number;
  successes: number;
  bans: number;
  failures: number;
  bytes: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

function bucketOf(ms: number): number {
  if (!(ms > 1)) return 0;
  return Math.min(BUCKETS - 1, Math.ceil(Math.log(ms) / LOG_GROWTH));
}

export class SlotStats {
  readonly #n = new Uint32Array(SLOTS * STRIDE);
  readonly #bytes = new Float64Array(SLOTS);
  /** The slot number (time / SLOT_MS) each slot holds; -1: none. */
  readonly #slot = new Float64Array(SLOTS).fill(-1);

  clear(): void {
    this.#n.fill(0);
    this.#bytes.fill(0);
    this.#slot.fill(-1);
  }

  /**
   * One call (or attempt): `fail` is a failure that counts (for a host, the call failed; for a proxy,
   * its own fault). Numbers, not an object: this runs on every call.
   */
  add(now: number, ok: boolean, ban: boolean, fail: boolean, latencyMs: number): void {
    const i = this.#at(Math.floor(now / SLOT_MS));
    const base = i * STRIDE;
    const n = this.#n;
    n[base + REQ]!++;
    if (ok) n[base + OK]!++;
    if (ban) n[base + BAN]!++;
    if (fail) n[base + FAIL]!++;
    n[base + COUNTS + bucketOf(latencyMs)]!++;
  }

  /** Bytes known once the call is over (a streamed body, a tunnel): counted in the slot of `now`. */
  addBytes(now: number, bytes: number): void {
    this.#bytes[this.#at(Math.floor(now / SLOT_MS))]! += bytes;
  }

  /** Calls in the last `slots` slots (the current one included). */
  requests(now: number, slots = SLOTS): number {
    const cur = Math.floor(now / SLOT_MS);
    let r = 0;
    for (let i = 0; i < SLOTS; i++) {
      const s = this.#slot[i]!;
      if (s > cur - slots && s <= cur) r += this.#n[i * STRIDE + REQ]!;
    }
    return r;
  }

  totals(now: number, slots: number): Totals {
    const cur = Math.floor(now / SLOT_MS);
    const t: Totals = {
      requests: 0,
      successes: 0,
      bans: 0,
      failures: 0,
      bytes: 0,
      p50_ms: null,
      p95_ms: null,
    };
    const hist = new Float64Array(BUCKETS);
    for (let i = 0; i < SLOTS; i++) {
      const s = this.#slot[i]!;
      if (!(s > cur - slots && s <= cur)) continue;
      const base = i * STRIDE;
      t.requests += this.#n[base + REQ]!;
      t.successes += this.#n[base + OK]!;
      t.bans += this.#n[base + BAN]!;
      t.failures += this.#n[base + FAIL]!;
      t.bytes += this.#bytes[i]!;
      for (let b = 0; b < BUCKETS; b++) hist[b]! += this.#n[base + COUNTS + b]!;
    }
    t.p50_ms = quantile(hist, t.requests, 0.5);
    t.p95_ms = quantile(hist, t.requests, 0.95);
    return t;
  }

  #at(slot: number): number {
    const i = slot % SLOTS;
    if (this.#slot[i] !== slot) {
      this.#slot[i] = slot;
      this.#n.fill(0, i * STRIDE, (i + 1) * STRIDE);
      this.#bytes[i] = 0;
    }
    return i;
  }
}

/** The q-quantile of the histogram: its bucket's geometric middle, in ms (1 ms resolution below 10). */
function quantile(hist: Float64Array, total: number, q: number): number | null {
  if (total === 0) return null;
  const want = Math.ceil(q * total);
  let seen = 0;
  for (let b = 0; b < BUCKETS; b++) {
    seen += hist[b]!;
    if (seen >= want) {
      const hi = GROWTH ** b;
      const mid = b === 0 ? 1 : hi / Math.sqrt(GROWTH);
      return Math.round(mid * 10) / 10;
    }
  }
  return GROWTH ** (BUCKETS - 1);
}
