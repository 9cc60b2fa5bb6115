import {
  ATTEMPT_OUTCOMES,
  type AttemptOutcome,
  type AttemptRecord,
  type CallRecord,
  DOORS,
  type Door,
} from '../metrics/calls.ts';
import { CALL_OUTCOMES, type CallOutcome, LogEntry, outcomeOf, pathOnly } from './entry.ts';

/**
 * The request log's ring, kept in columns: a call's facts are copied into typed arrays and arrays of
 * strings the engine already holds (proxy ids, methods, kinds, error codes, interned hosts), so the
 * engine's record and attempt objects die young and only the path string of a call is kept alive
 * per call. Keeping the objects themselves made every call's garbage survive into the old generation:
 * ~6% more CPU per absolute-URI GET in a paired run. A LogEntry is rebuilt from a slot when read.
 */

/** Attempts kept in the columns; a call with more keeps the rest as its objects (rare: max_attempts). */
const INLINE = 4;
const SCHEMES = [undefined, 'http', 'https'] as const;
const NONE = -1;
const SUCCESS = ATTEMPT_OUTCOMES.indexOf('success');

/** Interned host names, so that each call's fresh host string is not what the ring keeps. */
class Interned {
  #map = new Map<string, string>();

  of(s: string | undefined): string | undefined {
    if (s === undefined) return undefined;
    const known = this.#map.get(s);
    if (known !== undefined) return known;
    if (this.#map.size >= 4096) this.#map = new Map();
    this.#map.set(s, s);
    return s;
  }
}

export interface SlotFilter {
  readonly host?: string | undefined;
  readonly proxyId?: string | undefined;
  readonly outcome?: CallOutcome | undefined;
  readonly door?: Door | undefined;
  readonly since?: number | undefined;
}

export class Columns {
  readonly capacity: number;
  #next = 0;
  #size = 0;
  readonly #hosts = new Interned();
  readonly #id: Float64Array;
  readonly #at: Float64Array;
  readonly #latency: Float64Array;
  /** NaN while the call goes on. */
  readonly #duration: Float64Array;
  readonly #up: Float64Array;
  readonly #down: Float64Array;
  /** bit 0: ok; bits 1-3: door index + 1; bits 4-5: scheme index. */
  readonly #flags: Uint8Array;
  readonly #port: Int32Array;
  readonly #delivered: Int8Array;
  readonly #n: Uint8Array;
  /**
   * The call's outcome (a CALL_OUTCOMES index), kept when pushed, where the record is at hand: worked
   * out from the rebuilt record at each filter, an `outcome` filter cost ~0.3-0.5 s of the event loop on
   * a ring of 1,000,000, and ~20 ms read from here.
   */
  readonly #outcome: Uint8Array;
  /** LogEntry.told of the slot's call (0: not told yet). */
  readonly #told: Float64Array;
  /** The slot told as `n`, at `n % capacity` (the newest `capacity` told numbers never collide). */
  readonly #toldSlot: Int32Array;
  readonly #method: (string | undefined)[];
  readonly #host: (string | undefined)[];
  readonly #path: (string | null)[];
  readonly #session: (string | undefined)[];
  readonly #rule: (string | undefined)[];
  readonly #error: (string | undefined)[];
  readonly #aProxy: (string | undefined)[];
  readonly #aKind: (string | undefined)[];
  readonly #aOutcome: Uint8Array;
  readonly #aNumber: Uint8Array;
  readonly #aStatus: Uint16Array;
  readonly #aLatency: Float64Array;
  readonly #more: (readonly AttemptRecord[] | undefined)[];

  constructor(capacity: number) {
    this.capacity = capacity;
    const strings = <T>() => new Array<T | undefined>(capacity).fill(undefined);
    this.#id = new Float64Array(capacity);
    this.#at = new Float64Array(capacity);
    this.#latency = new Float64Array(capacity);
    this.#duration = new Float64Array(capacity);
    this.#up = new Float64Array(capacity);
    this.#down = new Float64Array(capacity);
    this.#flags = new Uint8Array(capacity);
    this.#port = new Int32Array(capacity);
    this.#delivered = new Int8Array(capacity);
    this.#n = new Uint8Array(capacity);
    this.#outcome = new Uint8Array(capacity);
    this.#told = new Float64Array(capacity);
    this.#toldSlot = new Int32Array(capacity).fill(-1);
    this.#method = strings<string>();
    this.#host = strings<string>();
    this.#path = new Array<string | null>(capacity).fill(null);
    this.#session = strings<string>();
    this.#rule = strings<string>();
    this.#error = strings<string>();
    this.#aProxy = new Array<string | undefined>(capacity * INLINE).fill(undefined);
    this.#aKind = new Array<string | undefined>(capacity * INLINE).fill(undefined);
    this.#aOutcome = new Uint8Array(capacity * INLINE);
    this.#aNumber = new Uint8Array(capacity * INLINE);
    this.#aStatus = new Uint16Array(capacity * INLINE);
    this.#aLatency = new Float64Array(capacity * INLINE);
    this.#more = strings<readonly AttemptRecord[]>();
  }

  get size(): number {
    return this.#size;
  }

  /** Copies `c` into the next slot (the oldest, once full); returns the slot. */
  push(c: CallRecord, at: number): number {
    const s = this.#next;
    this.#next = s + 1 === this.capacity ? 0 : s + 1;
    if (this.#size < this.capacity) this.#size++;
    this.#id[s] = c.id ?? 0;
    this.#at[s] = at;
    this.#latency[s] = c.latencyMs;
    this.#duration[s] = c.ok ? Number.NaN : c.latencyMs;
    this.#up[s] = 0;
    this.#down[s] = 0;
    const door = c.door === undefined ? 0 : DOORS.indexOf(c.door) + 1;
    const scheme = c.scheme === 'https' ? 2 : c.scheme === 'http' ? 1 : 0;
    this.#flags[s] = (c.ok ? 1 : 0) | (door << 1) | (scheme << 4);
    this.#outcome[s] = CALL_OUTCOMES.indexOf(outcomeOf(c));
    this.#told[s] = 0;
    this.#port[s] = c.port ?? NONE;
    this.#delivered[s] = c.deliveredAttempt ?? NONE;
    this.#method[s] = c.method;
    this.#host[s] = this.#hosts.of(c.host);
    // The previous call's path string when it is the same path (scrapers ask the same paths again and
    // again): the ring, in the old generation, then keeps no young string of this call to be copied
    // by each scavenge and promoted.
    const path = pathOnly(c.path);
    const prev = this.#path[s === 0 ? this.capacity - 1 : s - 1];
    this.#path[s] = path !== null && path === prev ? prev : path;
    this.#session[s] = c.sessionId;
    this.#rule[s] = c.rule;
    this.#error[s] = c.errorCode;
    this.#attempts(s, c.attempts);
    return s;
  }

  #attempts(s: number, list: readonly AttemptRecord[]): void {
    const n = Math.min(list.length, INLINE);
    this.#n[s] = n;
    for (let i = 0; i < n; i++) {
      const a = list[i]!;
      const k = s * INLINE + i;
      this.#aProxy[k] = a.proxyId;
      this.#aKind[k] = a.kind;
      this.#aOutcome[k] = ATTEMPT_OUTCOMES.indexOf(a.outcome);
      this.#aNumber[k] = a.attempt;
      this.#aStatus[k] = a.status ?? 0;
      this.#aLatency[k] = a.latencyMs;
    }
    this.#more[s] = list.length > INLINE ? list.slice(INLINE) : undefined;
  }

  /** The call in `slot` is over: its bytes and duration. */
  end(slot: number, up: number, down: number, now: number): void {
    this.#up[slot] = up;
    this.#down[slot] = down;
    this.#duration[slot] = Math.max(0, now - this.#at[slot]!);
  }

  idAt(slot: number): number {
    return this.#id[slot]!;
  }

  hostAt(slot: number): string | undefined {
    return this.#host[slot];
  }

  /** The proxy whose answer the call in `slot` delivered, if it is among the columns' attempts. */
  deliveredProxyAt(slot: number): string | undefined {
    if ((this.#flags[slot]! & 1) === 0) return undefined;
    const want = this.#delivered[slot]!;
    for (let i = this.#n[slot]! - 1; i >= 0; i--) {
      const k = slot * INLINE + i;
      if (want === NONE ? this.#aOutcome[k] === SUCCESS : this.#aNumber[k] === want) return this.#aProxy[k];
    }
    return undefined;
  }

  /** Slots newest first; stops when `visit` returns false. */
  newestFirst(visit: (slot: number) => boolean): void {
    for (let k = 1; k <= this.#size; k++) {
      const s = (this.#next - k + this.capacity) % this.capacity;
      if (!visit(s)) return;
    }
  }

  isOpen(slot: number): boolean {
    return Number.isNaN(this.#duration[slot]);
  }

  matches(slot: number, f: SlotFilter): boolean {
    if (f.since !== undefined && this.#at[slot]! < f.since) return false;
    if (f.host !== undefined && this.#host[slot] !== f.host) return false;
    if (f.door !== undefined && this.#doorOf(slot) !== f.door) return false;
    if (f.proxyId !== undefined && !this.#usedProxy(slot, f.proxyId)) return false;
    return f.outcome === undefined || CALL_OUTCOMES[this.#outcome[slot]!] === f.outcome;
  }

  #doorOf(slot: number): Door | undefined {
    const d = (this.#flags[slot]! >> 1) & 7;
    return d === 0 ? undefined : DOORS[d - 1];
  }

  #usedProxy(slot: number, id: string): boolean {
    const n = this.#n[slot]!;
    for (let i = 0; i < n; i++) if (this.#aProxy[slot * INLINE + i] === id) return true;
    return this.#more[slot]?.some((a) => a.proxyId === id) === true;
  }

  /** The engine's record as it was (its attempts rebuilt), for reading. */
  #call(slot: number): CallRecord {
    const attempts: AttemptRecord[] = [];
    for (let i = 0; i < this.#n[slot]!; i++) {
      const k = slot * INLINE + i;
      const kind = this.#aKind[k];
      const status = this.#aStatus[k]!;
      attempts.push({
        proxyId: this.#aProxy[k] ?? '',
        attempt: this.#aNumber[k]!,
        outcome: ATTEMPT_OUTCOMES[this.#aOutcome[k]!] as AttemptOutcome,
        latencyMs: this.#aLatency[k]!,
        ...(kind === undefined ? {} : { kind }),
        ...(status === 0 ? {} : { status }),
      });
    }
    attempts.push(...(this.#more[slot] ?? []));
    const flags = this.#flags[slot]!;
    const port = this.#port[slot]!;
    const delivered = this.#delivered[slot]!;
    return {
      id: this.#id[slot]!,
      ok: (flags & 1) === 1,
      latencyMs: this.#latency[slot]!,
      attempts,
      errorCode: this.#error[slot],
      deliveredAttempt: delivered === NONE ? undefined : delivered,
      door: this.#doorOf(slot),
      method: this.#method[slot],
      scheme: SCHEMES[(flags >> 4) & 3],
      host: this.#host[slot],
      port: port === NONE ? undefined : port,
      path: this.#path[slot] ?? undefined,
      sessionId: this.#session[slot],
      rule: this.#rule[slot],
    };
  }

  /** The slot as a LogEntry (built now: for reading, never on a call's path). */
  /** The slot's call was told as the `n`th finished call. */
  told(slot: number, n: number): void {
    this.#told[slot] = n;
    this.#toldSlot[n % this.capacity] = slot;
  }

  /** The slot holding the call told as `n`, or -1 when it was overwritten since (or never kept). */
  slotOfTold(n: number): number {
    const slot = this.#toldSlot[n % this.capacity]!;
    return slot >= 0 && this.#told[slot] === n ? slot : -1;
  }

  entry(slot: number): LogEntry {
    const e = new LogEntry(this.#call(slot), this.#at[slot]!);
    e.told = this.#told[slot]!;
    if (!this.isOpen(slot)) {
      e.up = this.#up[slot]!;
      e.down = this.#down[slot]!;
      e.durationMs = this.#duration[slot]!;
    }
    return e;
  }
}
