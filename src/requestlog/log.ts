import type { CallRecord, Door } from '../metrics/calls.ts';
import { type CallOutcome, LogEntry } from './entry.ts';
import { Ring } from './ring.ts';

/**
 * The request log: one LogEntry per call the engine reports (Executor onCall), kept in a bounded ring
 * (ROTA_REQUEST_LOG_SIZE; 0 keeps none), newest first for GET requests, and told to listeners (the
 * live stream, the access log, per-host analytics) once the call is over: at once for a call that
 * failed, at its door's Executor.ended() for one that answered (its body streamed, its tunnel closed).
 *
 *   Executor ──onCall──▶ LogEntry ──▶ ring (shown as open)        ──▶ listeners, if it failed
 *   door ──Executor.ended(id, up, down)──▶ entry.end() ──────────────▶ listeners
 *
 * Per call: one entry and, while its answer flows, one map slot. Per instance: each instance keeps its
 * own log (the API says so).
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

/**
 * Heap a full log may take per record, at most: the entry, the engine's record and attempts, and the
 * path string (log.test.ts measures 10,000 of them).
 */
export const RECORD_BYTES_BOUND = 1_024;

/** Open calls kept at most: a door that never tells the end must not make the map grow for ever. */
const MAX_OPEN = 100_000;
/** Ends told before their call was reported (a hedged call reports once its overtaken attempts let go). */
const MAX_EARLY = 1_000;

export class RequestLog {
  readonly #ring: Ring<LogEntry> | null;
  readonly #now: () => number;
  readonly #open = new Map<number, LogEntry>();
  readonly #early = new Map<number, { up: number; down: number; at: number }>();
  readonly #listeners = new Set<LogListener>();

  constructor(opts: { size: number; now: () => number }) {
    this.#ring = opts.size > 0 ? new Ring<LogEntry>(opts.size) : null;
    this.#now = opts.now;
  }

  /** Entries kept at most (ROTA_REQUEST_LOG_SIZE). */
  get capacity(): number {
    return this.#ring?.capacity ?? 0;
  }

  get size(): number {
    return this.#ring?.size ?? 0;
  }

  onCall(call: CallRecord): void {
    const now = this.#now();
    const e = new LogEntry(call, now - call.latencyMs);
    this.#ring?.push(e);
    const id = call.id;
    if (!call.ok || id === undefined) {
      this.#tell(e);
      return;
    }
    const early = this.#early.size > 0 ? this.#early.get(id) : undefined;
    if (early !== undefined) {
      this.#early.delete(id);
      e.end(early.up, early.down, early.at);
      this.#tell(e);
      return;
    }
    if (this.#open.size >= MAX_OPEN) this.#open.delete(this.#open.keys().next().value as number);
    this.#open.set(id, e);
  }

  /** The call `id` is over: its bytes each way (Executor.ended). */
  ended(id: number, up: number, down: number): void {
    const e = this.#open.get(id);
    if (e === undefined) {
      if (this.#early.size >= MAX_EARLY) this.#early.delete(this.#early.keys().next().value as number);
      this.#early.set(id, { up, down, at: this.#now() });
      return;
    }
    this.#open.delete(id);
    e.end(up, down, this.#now());
    this.#tell(e);
  }

  /** Told every finished call from now on; returns the way to stop. */
  subscribe(fn: LogListener): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  get listeners(): number {
    return this.#listeners.size;
  }

  /** One page of the entries matching `f`, newest first, and how many match in all. */
  list(f: LogFilter, page: number, pageSize: number): { items: LogEntry[]; total: number } {
    const items: LogEntry[] = [];
    const skip = (page - 1) * pageSize;
    let total = 0;
    this.#ring?.newestFirst((e) => {
      if (f.since !== undefined && e.at < f.since) return true;
      if (!matches(e, f)) return true;
      if (total >= skip && items.length < pageSize) items.push(e);
      total++;
      return true;
    });
    return { items, total };
  }

  /** Finished entries matching `f` with an id above `id`, oldest first (a stream's reconnection). */
  after(id: number, f: LogFilter): LogEntry[] {
    const out: LogEntry[] = [];
    this.#ring?.newestFirst((e) => {
      const eid = e.call.id ?? 0;
      if (eid <= id) return false;
      if (!e.open && matches(e, f)) out.push(e);
      return true;
    });
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

export function matches(e: LogEntry, f: LogFilter): boolean {
  if (f.host !== undefined && e.host !== f.host) return false;
  if (f.door !== undefined && e.door !== f.door) return false;
  if (f.since !== undefined && e.at < f.since) return false;
  if (f.outcome !== undefined && e.outcome() !== f.outcome) return false;
  return f.proxyId === undefined || e.usedProxy(f.proxyId);
}
