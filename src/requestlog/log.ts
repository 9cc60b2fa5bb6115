import type { CallRecord, Door } from '../metrics/calls.ts';
import { Columns } from './columns.ts';
import { type CallOutcome, deliveredOf, LogEntry } from './entry.ts';

/**
 * The request log: every call the engine reports (Executor onCall) copied into a bounded ring of
 * columns (ROTA_REQUEST_LOG_SIZE; 0 keeps none), newest first for GET requests; per-host analytics
 * told at once; listeners (the live stream, the access log) told once the call is over: at once for a
 * call that failed, at its door's Executor.ended() for one that answered (its body streamed, its
 * tunnel closed).
 *
 *   Executor ──onCall──▶ columns (shown as open) · hosts ──▶ listeners, if it failed
 *   door ──Executor.ended(id, up, down)──▶ bytes, duration ──▶ hosts' bytes · listeners
 *
 * Per call: one clock read at its report and one at its end, a slot's writes and, while its answer
 * flows, one entry of a fixed table (no map entry, no object); objects only for listeners.
 * Per instance: each instance keeps its own log (the API says so).
 */

export interface LogFilter {
  readonly host?: string | undefined;
  readonly proxyId?: string | undefined;
  readonly outcome?: CallOutcome | undefined;
  readonly door?: Door | undefined;
  /** Epoch ms: calls that began at or after it. */
  readonly since?: number | undefined;
}

export type LogListener = (e: LogEntry) => void;

/** What per-host analytics take from the log (hosts/hosts.ts). */
export interface HostSink {
  /** `now`: the log's own reading of the clock, so that a call reads it once. */
  recordCall(c: CallRecord, now?: number): void;
  addBytes(host: string, proxyId: string | undefined, bytes: number, now?: number): void;
}

/**
 * Heap a full log may take per record, at most: its slot in the columns and its path string
 * (log.test.ts measures 10,000 of them).
 */
export const RECORD_BYTES_BOUND = 1_024;

/** Entries a stream's reconnection is sent at most (GET requests pages are of 1,000 at most too). */
export const REPLAY_MAX = 1_000;

/** Open calls kept at most: a door that never tells the end must not make the map grow for ever. */
const MAX_OPEN = 100_000;
/**
 * Open calls are first kept in a table of this many entries, at `id % OPEN_TABLE` (ids follow each
 * other, so calls open at the same time rarely meet there): a call's open and end are a few array
 * writes, where a Map's set and delete per call cost ~1% CPU per absolute-URI GET (its table is
 * rebuilt as entries come and go). A call that finds its entry taken moves the older one to the maps.
 */
const OPEN_TABLE = 4_096;
/** Ends told before their call was reported (a hedged call reports once its overtaken attempts let go). */
const MAX_EARLY = 1_000;

interface Early {
  readonly up: number;
  readonly down: number;
  readonly at: number;
}

export class RequestLog {
  readonly #cols: Columns | null;
  readonly #now: () => number;
  readonly #hosts: HostSink | undefined;
  /** Open calls: the table (OPEN_TABLE) by `id % OPEN_TABLE`, -1 where none. */
  readonly #tId = new Float64Array(OPEN_TABLE).fill(-1);
  /** With the ring: the call's slot. */
  readonly #tSlot = new Int32Array(OPEN_TABLE);
  /** Without: its record and start (a LogEntry is made only when it is told to listeners). */
  readonly #tCall: (CallRecord | undefined)[] = new Array<CallRecord | undefined>(OPEN_TABLE).fill(undefined);
  readonly #tAt = new Float64Array(OPEN_TABLE);
  /** Open calls the table had no room for, by id: their slot (with the ring), or their record (without). */
  readonly #open = new Map<number, number>();
  readonly #openCalls = new Map<number, LogEntry>();
  readonly #early = new Map<number, Early>();
  readonly #listeners = new Set<LogListener>();
  /** Finished calls told so far (LogEntry.told of the last). */
  #toldCount = 0;

  constructor(opts: { size: number; now: () => number; hosts?: HostSink }) {
    this.#cols = opts.size > 0 ? new Columns(opts.size) : null;
    this.#now = opts.now;
    this.#hosts = opts.hosts;
  }

  /** Entries kept at most (ROTA_REQUEST_LOG_SIZE). */
  get capacity(): number {
    return this.#cols?.capacity ?? 0;
  }

  get size(): number {
    return this.#cols?.size ?? 0;
  }

  onCall(call: CallRecord): void {
    const now = this.#now();
    const at = now - call.latencyMs;
    this.#hosts?.recordCall(call, now);
    const slot = this.#cols === null ? -1 : this.#cols.push(call, at);
    const id = call.id;
    if (!call.ok || id === undefined) {
      // Over already: told now (and numbered, so that a reconnecting stream finds it).
      const n = ++this.#toldCount;
      if (slot >= 0) this.#cols?.told(slot, n);
      if (this.#listeners.size > 0) {
        const e = this.#entry(slot, call, at);
        e.told = n;
        this.#tell(e);
      }
      return;
    }
    const early = this.#early.size > 0 ? this.#early.get(id) : undefined;
    if (early !== undefined) {
      this.#early.delete(id);
      if (slot >= 0) this.#ended(slot, early.up, early.down, early.at);
      else this.#endEntry(new LogEntry(call, at), early.up, early.down, early.at);
      return;
    }
    if (slot < 0 && this.#hosts === undefined && this.#listeners.size === 0) return;
    const k = id % OPEN_TABLE;
    const held = this.#tId[k]!;
    if (held !== -1) this.#toMaps(k, held);
    this.#tId[k] = id;
    if (slot >= 0) this.#tSlot[k] = slot;
    else {
      this.#tCall[k] = call;
      this.#tAt[k] = at;
    }
  }

  /** The table's entry `k` (call `id`) makes room: into the maps, as it was kept before the table. */
  #toMaps(k: number, id: number): void {
    if (this.#cols !== null) {
      if (this.#open.size >= MAX_OPEN) this.#open.delete(this.#open.keys().next().value as number);
      this.#open.set(id, this.#tSlot[k]!);
      return;
    }
    if (this.#openCalls.size >= MAX_OPEN)
      this.#openCalls.delete(this.#openCalls.keys().next().value as number);
    this.#openCalls.set(id, new LogEntry(this.#tCall[k] as CallRecord, this.#tAt[k]!));
    this.#tCall[k] = undefined;
  }

  /** The call `id` is over: its bytes each way (Executor.ended). */
  ended(id: number, up: number, down: number): void {
    const k = id % OPEN_TABLE;
    if (this.#tId[k] === id) {
      this.#tId[k] = -1;
      const cols = this.#cols;
      if (cols !== null) {
        const slot = this.#tSlot[k]!;
        // Overwritten meanwhile (10,000 newer calls while it went on): nothing left to complete.
        if (cols.idAt(slot) === id) this.#ended(slot, up, down, this.#now());
        return;
      }
      const call = this.#tCall[k] as CallRecord;
      this.#tCall[k] = undefined;
      const at = this.#tAt[k]!;
      if (this.#listeners.size > 0) this.#endEntry(new LogEntry(call, at), up, down, this.#now());
      else if (call.host !== undefined)
        this.#hosts?.addBytes(call.host, deliveredOf(call)?.proxyId, up + down, this.#now());
      return;
    }
    const slot = this.#open.size > 0 ? this.#open.get(id) : undefined;
    if (slot !== undefined) {
      this.#open.delete(id);
      if (this.#cols?.idAt(slot) === id) this.#ended(slot, up, down, this.#now());
      return;
    }
    const e = this.#openCalls.size > 0 ? this.#openCalls.get(id) : undefined;
    if (e !== undefined) {
      this.#openCalls.delete(id);
      this.#endEntry(e, up, down, this.#now());
      return;
    }
    if (this.#early.size >= MAX_EARLY) this.#early.delete(this.#early.keys().next().value as number);
    this.#early.set(id, { up, down, at: this.#now() });
  }

  #ended(slot: number, up: number, down: number, now: number): void {
    const cols = this.#cols as Columns;
    cols.end(slot, up, down, now);
    cols.told(slot, ++this.#toldCount);
    const host = cols.hostAt(slot);
    if (host !== undefined) this.#hosts?.addBytes(host, cols.deliveredProxyAt(slot), up + down, now);
    if (this.#listeners.size > 0) this.#tell(cols.entry(slot));
  }

  #endEntry(e: LogEntry, up: number, down: number, now: number): void {
    e.end(up, down, now);
    e.told = ++this.#toldCount;
    const host = e.call.host;
    if (host !== undefined) this.#hosts?.addBytes(host, deliveredOf(e.call)?.proxyId, up + down, now);
    if (this.#listeners.size > 0) this.#tell(e);
  }

  #entry(slot: number, call: CallRecord, at: number): LogEntry {
    return slot >= 0 && this.#cols !== null ? this.#cols.entry(slot) : new LogEntry(call, at);
  }

  /** Told every finished call from now on; returns the way to stop. */
  subscribe(fn: LogListener): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** One page of the entries matching `f`, newest first, and how many match in all. */
  list(f: LogFilter, page: number, pageSize: number): { items: LogEntry[]; total: number } {
    const cols = this.#cols;
    const items: LogEntry[] = [];
    const skip = (page - 1) * pageSize;
    if (cols !== null && unfiltered(f)) {
      // Every entry matches: the page alone is read, the count is the ring's.
      let seen = 0;
      cols.newestFirst((slot) => {
        if (seen++ >= skip) items.push(cols.entry(slot));
        return items.length < pageSize;
      });
      return { items, total: cols.size };
    }
    let total = 0;
    cols?.newestFirst((slot) => {
      if (!cols.matches(slot, f)) return true;
      if (total >= skip && items.length < pageSize) items.push(cols.entry(slot));
      total++;
      return true;
    });
    return { items, total };
  }

  /**
   * Finished entries matching `f` told after the `told`th (LogEntry.told: a stream's event id, which a
   * reconnection names in Last-Event-ID), in the order they were told: the newest REPLAY_MAX of them at
   * most, so that one reconnection (`Last-Event-ID: 0`) cannot make Rota serialise the whole ring for
   * one client.
   */
  after(told: number, f: LogFilter): LogEntry[] {
    const cols = this.#cols;
    if (cols === null || told >= this.#toldCount) return [];
    // Walked back from the last told, slot by told number (columns.ts slotOfTold): as far as the ring
    // can reach, REPLAY_MAX found at most.
    const out: LogEntry[] = [];
    const stop = Math.max(told, this.#toldCount - cols.capacity);
    for (let n = this.#toldCount; n > stop && out.length < REPLAY_MAX; n--) {
      const slot = cols.slotOfTold(n);
      if (slot >= 0 && cols.matches(slot, f)) out.push(cols.entry(slot));
    }
    return out.reverse();
  }

  /** A listener that throws must not fail the call that told it (this runs on the call's path). */
  #tell(e: LogEntry): void {
    for (const fn of this.#listeners) {
      try {
        fn(e);
      } catch {
        this.#listeners.delete(fn);
      }
    }
  }
}

function unfiltered(f: LogFilter): boolean {
  return (
    f.host === undefined &&
    f.door === undefined &&
    f.since === undefined &&
    f.outcome === undefined &&
    f.proxyId === undefined
  );
}

export function matches(e: LogEntry, f: LogFilter): boolean {
  if (f.host !== undefined && e.host !== f.host) return false;
  if (f.door !== undefined && e.door !== f.door) return false;
  if (f.since !== undefined && e.at < f.since) return false;
  if (f.outcome !== undefined && e.outcome() !== f.outcome) return false;
  return f.proxyId === undefined || e.usedProxy(f.proxyId);
}
