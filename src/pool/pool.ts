import { RotaError } from '../errors/rota-error.ts';
import { nextTurn } from '../lib/turns.ts';
import { DuplicateProxyError, type ProxyStore } from '../store/types.ts';
import {
  type AddProxyInput,
  type BulkOutcome,
  countryMoves,
  type PoolListener,
  type ProxyEntry,
  type ProxyPatch,
} from './entry.ts';
import { effectiveCountry, Members, matchesFilter } from './members.ts';
import { buildRecord, patchRecord, tryBuild } from './record.ts';
import {
  type ExitIdentity,
  identityKey,
  identityName,
  isGateway,
  type ProxyRecord,
  type ProxyStatus,
  publicUrl,
  type StatusFilter,
  servesAnyCountry,
} from './types.ts';

export type {
  AddProxyInput,
  BulkOutcome,
  PoolListener,
  ProxyEntry,
  ProxyPatch,
  ProxyStats,
} from './entry.ts';

type Clock = () => number;

/** An unchanged exit is stored again (its seen-at refreshed) after this long. */
export const EXIT_REFRESH_MS = 3_600_000;

/** Inputs handled between two turns of the event loop in addMany (~10-20 ms of work here). */
const BULK_SLICE = 1000;

export function duplicate(record: ProxyRecord): RotaError {
  return new RotaError('PROXY_ALREADY_EXISTS', `A proxy with URL ${publicUrl(record)} already exists`, {
    details: { url: publicUrl(record) },
  });
}

/**
 * The in-memory pool. The store is the durable copy; the pool is the one every read and every selection
 * uses, so that rotation never waits on I/O. Writes go to the store first and reach the pool only once
 * acknowledged, so an answer of 201 or 204 always means the change is durable.
 */
export class Pool {
  private readonly members = new Members();
  /** Members by their exit address (exits.ts). */
  readonly exits = this.members.exits;
  private readonly pending = new Set<string>();
  /** Per member, the end of the change of it running now (update). */
  private readonly updating = new Map<string, Promise<void>>();
  private readonly listeners: PoolListener[] = [];
  private statusOf: (id: string) => ProxyStatus = () => 'active';
  private readonly store: ProxyStore;
  private readonly now: Clock;

  constructor(store: ProxyStore, now: Clock) {
    this.store = store;
    this.now = now;
  }

  /** Loads every stored proxy, in creation order; listeners hear of each as if it had just been added. */
  async load(): Promise<void> {
    const loaded: ProxyEntry[] = [];
    const removalsBefore = this.members.removals;
    for await (const page of this.store.loadPages()) {
      for (const record of page) {
        const entry = this.members.insert(record, false);
        loaded.push(entry);
        for (const l of this.listeners) l.added?.(entry);
      }
    }
    // Nothing else should change the pool before the listeners open; if something did, a member removed
    // while later pages were read is left out.
    const removed = this.members.removals !== removalsBefore;
    this.members.identity.defer(removed ? loaded.filter((e) => this.members.holds(e)) : loaded);
  }

  listen(listener: PoolListener): void {
    this.listeners.push(listener);
  }

  /** The breaker decides `status`; the pool only asks. */
  setStatusResolver(fn: (id: string) => ProxyStatus): void {
    this.statusOf = fn;
  }

  status(id: string): ProxyStatus {
    return this.statusOf(id);
  }

  get size(): number {
    return this.members.size;
  }

  get(id: string): ProxyEntry | undefined {
    return this.members.get(id);
  }

  /** Every member in creation order. The array is shared: callers must not mutate it. */
  all(): readonly ProxyEntry[] {
    return this.members.all();
  }

  async add(input: AddProxyInput): Promise<ProxyEntry> {
    const record = buildRecord(input, this.now());
    const key = identityKey(record);
    if (this.members.identity.has(record) || this.pending.has(key)) throw duplicate(record);
    this.pending.add(key);
    try {
      await this.store.insert(record);
    } catch (err) {
      // The store knows a row the pool does not (another writer): still a duplicate, not a 500.
      if (err instanceof DuplicateProxyError) throw duplicate(record);
      throw err;
    } finally {
      this.pending.delete(key);
    }
    const entry = this.members.insert(record);
    for (const l of this.listeners) l.added?.(entry);
    return entry;
  }

  /**
   * Adds every valid, new input in ONE store transaction, then to the pool, telling listeners of each. An
   * input that repeats an earlier one or a member (or one being added) is a duplicate. All or nothing
   * against the store: when another writer took an identity meanwhile, nothing is added (409).
   *
   * The event loop gets a turn every BULK_SLICE inputs (a list of 100,000 held it for over a second in
   * each pass), so an identity is reserved in `pending` as soon as it is checked: a concurrent add of it
   * is then a duplicate.
   */
  async addMany(inputs: readonly AddProxyInput[]): Promise<BulkOutcome[]> {
    const outcomes: (BulkOutcome | ProxyRecord)[] = [];
    const keys: string[] = [];
    try {
      for (let i = 0; i < inputs.length; i++) {
        outcomes.push(this.reserve(inputs[i]!, keys));
        if (i % BULK_SLICE === BULK_SLICE - 1) await nextTurn();
      }
      await this.storeMany(outcomes.filter((o): o is ProxyRecord => 'id' in o));
      const out: BulkOutcome[] = [];
      for (let i = 0; i < outcomes.length; i++) {
        const o = outcomes[i]!;
        if (!('id' in o)) out.push(o);
        else {
          const entry = this.members.insert(o);
          for (const l of this.listeners) l.added?.(entry);
          out.push({ kind: 'created', entry });
        }
        if (i % BULK_SLICE === BULK_SLICE - 1) await nextTurn();
      }
      return out;
    } finally {
      for (const key of keys) this.pending.delete(key);
    }
  }

  /** An input as a record, its identity reserved in `pending` (and in `keys`), or why not. */
  private reserve(input: AddProxyInput, keys: string[]): BulkOutcome | ProxyRecord {
    const record = tryBuild(input, this.now());
    if (typeof record === 'string') return { kind: 'invalid', reason: record };
    const key = identityKey(record);
    if (this.members.identity.has(record) || this.pending.has(key)) return { kind: 'duplicate' };
    this.pending.add(key);
    keys.push(key);
    return record;
  }

  private async storeMany(records: readonly ProxyRecord[]): Promise<void> {
    try {
      await this.store.insertMany(records);
    } catch (err) {
      if (err instanceof DuplicateProxyError) {
        throw new RotaError('PROXY_ALREADY_EXISTS', 'Another writer added some of these proxies meanwhile', {
          details: { stored: 0 },
        });
      }
      throw err;
    }
  }

  /**
   * The record an input would become (a fresh id, never stored), for checks made before adding it, such
   * as a source's health probe. Throws INVALID_PROXY_FORMAT like `add`.
   */
  draft(input: AddProxyInput): ProxyRecord {
    return buildRecord(input, this.now());
  }

  /** True when a member, or one being added, has this record's identity (URL + username). */
  knows(record: ProxyRecord): boolean {
    return this.members.identity.has(record) || this.pending.has(identityKey(record));
  }

  async remove(id: string): Promise<boolean> {
    const entry = this.members.get(id);
    if (!entry) return false;
    await this.store.remove(id);
    // A concurrent remove may have won while we awaited the store.
    if (this.members.get(id) !== entry) return false;
    this.members.unlink(entry);
    for (const l of this.listeners) l.removed?.(entry);
    return true;
  }

  /**
   * Changes a member in place (PATCH): the store first, then the entry's record, then the listeners. Null
   * when there is no such member (or it went meanwhile); 409 when a new username makes it a duplicate.
   * Changes of one member run one after the other: each builds on the record the one before left (two at
   * once each built on the same old record, and the later write undid the earlier change).
   */
  update(id: string, patch: ProxyPatch): Promise<ProxyEntry | null> {
    const run = (this.updating.get(id) ?? Promise.resolve()).then(() => this.updateNow(id, patch));
    const settled = run.then(
      () => {},
      () => {},
    );
    this.updating.set(id, settled);
    void settled.then(() => {
      if (this.updating.get(id) === settled) this.updating.delete(id);
    });
    return run;
  }

  private async updateNow(id: string, patch: ProxyPatch): Promise<ProxyEntry | null> {
    const entry = this.members.get(id);
    if (!entry) return null;
    const before = entry.record;
    const record = patchRecord(before, patch, this.now());
    const renamed = identityName(before) !== identityName(record);
    const key = identityKey(record);
    if (renamed && (this.members.identity.has(record) || this.pending.has(key))) throw duplicate(record);
    if (renamed) this.pending.add(key);
    try {
      if (!(await this.store.update(record))) return null;
    } catch (err) {
      if (err instanceof DuplicateProxyError) throw duplicate(record);
      throw err;
    } finally {
      if (renamed) this.pending.delete(key);
    }
    if (this.members.get(id) !== entry) return null;
    // Made a gateway: its exit changes by design, so the one learned as a static proxy is no longer its
    // (a ban on a member sharing it would otherwise cool the gateway). Forgotten here at once, and in the
    // store as well as it goes (a failed write leaves a stale row that the next start reads as a gateway's
    // exit, which no gateway uses).
    if (isGateway(record) && entry.exit !== null) {
      this.members.moveExit(entry, null);
      this.store.setExit(id, null).catch(() => {});
    }
    this.replace(entry, record);
    return entry;
  }

  /** The entry gets `record` (same id and address); listeners hear of it with what it was before. */
  private replace(entry: ProxyEntry, record: ProxyRecord): void {
    const before = entry.record;
    const country = entry.country;
    entry.record = record;
    entry.country = effectiveCountry(record, entry.exit);
    // Indexes by country (geo-targeted) also hold the gateways that render any country asked.
    if (entry.country !== country || servesAnyCountry(before) !== servesAnyCountry(record))
      countryMoves.count++;
    for (const l of this.listeners) l.updated?.(entry, before, country);
  }

  /**
   * What a health check learned of the member's exit: stored, then on the entry (its effective country
   * follows a learned exit country), listeners told when the address, country or ASN moved. An exit seen
   * again unchanged is written at most once per EXIT_REFRESH_MS (a health run must not write every row).
   */
  async setExit(entry: ProxyEntry, exit: ExitIdentity | null): Promise<void> {
    const old = entry.exit;
    const moved = old?.ip !== exit?.ip || old?.country !== exit?.country || old?.asn !== exit?.asn;
    if (!moved && (exit === null || old === null || exit.seenAt - old.seenAt < EXIT_REFRESH_MS)) return;
    await this.store.setExit(entry.record.id, exit);
    if (this.members.get(entry.record.id) !== entry) return;
    const country = entry.country;
    this.members.moveExit(entry, exit);
    entry.country = effectiveCountry(entry.record, exit);
    if (entry.country !== country) countryMoves.count++;
    if (moved) for (const l of this.listeners) l.updated?.(entry, entry.record, country);
  }

  /** Another instance changed member `id` in the shared store: read it again from there. */
  async applyRemoteUpdate(id: string): Promise<void> {
    const record = await this.store.get(id);
    const entry = this.members.get(id);
    if (record === null || entry === undefined) return;
    this.applyingRemote = true;
    try {
      this.members.moveExit(entry, record.exit ?? null);
      this.replace(entry, record);
    } finally {
      this.applyingRemote = false;
    }
  }

  /** The store's records, as they are now (shared state compares them with the pool after an outage). */
  storeRecords(): AsyncIterable<readonly ProxyRecord[]> {
    return this.store.loadPages();
  }

  /** True while a change made by another instance is applied: listeners need not tell it back. */
  applyingRemote = false;

  /**
   * Another instance added proxy `id` to the shared store (shared state): read it from there and add it
   * here, unless it is here already. False when the store does not have it (removed meanwhile).
   */
  async applyRemoteAdd(id: string): Promise<boolean> {
    if (this.members.get(id) !== undefined) return true;
    const record = await this.store.get(id);
    if (record === null || this.members.get(id) !== undefined) return record !== null;
    this.applyingRemote = true;
    try {
      const entry = this.members.insert(record);
      for (const l of this.listeners) l.added?.(entry);
    } finally {
      this.applyingRemote = false;
    }
    return true;
  }

  /** Another instance removed proxy `id` from the shared store: drop it here without writing. */
  applyRemoteRemove(id: string): void {
    const entry = this.members.get(id);
    if (!entry) return;
    this.members.unlink(entry);
    this.applyingRemote = true;
    try {
      for (const l of this.listeners) l.removed?.(entry);
    } finally {
      this.applyingRemote = false;
    }
  }

  /** How many other members were last seen exiting from `e`'s address. */
  exitSharedWith(e: ProxyEntry): number {
    return this.exits.sharedWith(e);
  }

  matches(entry: ProxyEntry, filter: StatusFilter | undefined): boolean {
    return matchesFilter(entry, filter, this.statusOf);
  }

  page(page: number, pageSize: number, filter?: StatusFilter): { items: ProxyEntry[]; total: number } {
    return this.members.page(page, pageSize, filter === undefined ? null : (e) => this.matches(e, filter));
  }

  /** Yields a stable snapshot in creation order; members removed meanwhile are skipped. */
  *iterate(filter?: StatusFilter): Generator<ProxyEntry> {
    const snapshot = this.members.all().slice();
    for (const e of snapshot) {
      if (this.members.holds(e) && this.matches(e, filter)) yield e;
    }
  }
}
