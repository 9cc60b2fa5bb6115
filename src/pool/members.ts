import type { ProxyEntry } from './entry.ts';
import { ExitIndex } from './exits.ts';
import { IdentityIndex } from './identity.ts';
import type { ExitIdentity, ProxyRecord, ProxyStatus, StatusFilter } from './types.ts';
import { isGateway, publicUrl } from './types.ts';

/**
 * The pool's members in memory and their indexes (by id, by identity, by exit address, in creation
 * order), with no I/O: Pool (pool.ts) changes them only once the store has acknowledged a write.
 */
export class Members {
  readonly #byId = new Map<string, ProxyEntry>();
  readonly identity = new IdentityIndex();
  /** Members by their exit address (exits.ts). */
  readonly exits = new ExitIndex();
  #ordered: ProxyEntry[] = [];
  /** Members removed so far (Pool.load checks whether any went while it read). */
  removals = 0;

  get size(): number {
    return this.#ordered.length;
  }

  get(id: string): ProxyEntry | undefined {
    return this.#byId.get(id);
  }

  /** True when `entry` is (still) the member of its id. */
  holds(entry: ProxyEntry): boolean {
    return this.#byId.get(entry.record.id) === entry;
  }

  /** Every member in creation order. The array is shared: callers must not mutate it. */
  all(): readonly ProxyEntry[] {
    return this.#ordered;
  }

  /** `index` false: the caller hands the entry to the identity index itself (load: deferred). */
  insert(record: ProxyRecord, index = true): ProxyEntry {
    // A gateway keeps no exit (its exit changes by design), whatever its stored row says.
    const exit = isGateway(record) ? null : (record.exit ?? null);
    const entry: ProxyEntry = {
      record,
      url: publicUrl(record),
      country: effectiveCountry(record, exit),
      exit,
      health: 'unknown',
      consecutiveFailures: 0,
      inFlight: 0,
      stats: { total: 0, success: 0, failed: 0, latencySumMs: 0 },
    };
    this.#byId.set(record.id, entry);
    if (index) this.identity.add(entry);
    this.exits.add(entry);
    this.#ordered.push(entry);
    return entry;
  }

  /** Takes `entry` out of every index (the store has it no more). */
  unlink(entry: ProxyEntry): void {
    this.#byId.delete(entry.record.id);
    this.removals++;
    this.identity.delete(entry);
    this.exits.delete(entry);
    const idx = this.#ordered.indexOf(entry);
    if (idx !== -1) this.#ordered.splice(idx, 1);
  }

  /** The entry's exit becomes `exit`, in the exit index too. */
  moveExit(entry: ProxyEntry, exit: ExitIdentity | null): void {
    this.exits.delete(entry);
    entry.exit = exit;
    this.exits.add(entry);
  }

  page(
    page: number,
    pageSize: number,
    match: ((e: ProxyEntry) => boolean) | null,
  ): { items: ProxyEntry[]; total: number } {
    const start = (page - 1) * pageSize;
    if (match === null) {
      return { items: this.#ordered.slice(start, start + pageSize), total: this.#ordered.length };
    }
    const items: ProxyEntry[] = [];
    let total = 0;
    for (const e of this.#ordered) {
      if (!match(e)) continue;
      if (total >= start && items.length < pageSize) items.push(e);
      total++;
    }
    return { items, total };
  }
}

/** Whether `entry` passes a status filter; `statusOf` is the breaker's view of it (active, degraded, failed). */
export function matchesFilter(
  entry: ProxyEntry,
  filter: StatusFilter | undefined,
  statusOf: (id: string) => ProxyStatus,
): boolean {
  switch (filter) {
    case undefined:
      return true;
    case 'active':
    case 'degraded':
    case 'failed':
      return statusOf(entry.record.id) === filter;
    case 'unhealthy':
      return entry.health === 'degraded' || entry.health === 'unhealthy' || entry.health === 'dead';
    default:
      return entry.health === filter;
  }
}

/** The country selection uses: the declared one, else the exit's (docs/decisions.md, "Exit identity"). */
export function effectiveCountry(record: ProxyRecord, exit: ExitIdentity | null): string | null {
  return record.country ?? exit?.country ?? null;
}
