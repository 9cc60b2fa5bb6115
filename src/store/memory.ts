import { BulkGate, nextTurn } from '../lib/turns.ts';
import { type ExitIdentity, identityKey, type ProxyRecord } from '../pool/types.ts';
import { DuplicateProxyError, type ProxyStore } from './types.ts';

/** Records handled between two turns of the event loop in insertMany (~10 ms of work here). */
const SLICE = 1000;

/** Keeps everything in this process: the default, and what tests use. */
export class MemoryStore implements ProxyStore {
  readonly backend = 'memory' as const;
  private readonly records = new Map<string, ProxyRecord>();
  private readonly identities = new Set<string>();
  private readonly settings = new Map<string, string>();
  private isOpen = false;
  /**
   * insertMany's check and insert, done across turns of the event loop: the other proxy operations wait
   * for it, as they would for a transaction, so no write slips between its check and its insert and no
   * read sees half of it.
   */
  readonly #bulk = new BulkGate();

  get connected(): boolean {
    return this.isOpen;
  }

  async open(): Promise<void> {
    this.isOpen = true;
  }

  async *loadPages(): AsyncIterable<readonly ProxyRecord[]> {
    const all = await this.#bulk.whenIdle(() => [...this.records.values()]);
    if (all.length > 0) yield all;
  }

  get(id: string): Promise<ProxyRecord | null> {
    return this.#bulk.whenIdle(() => this.records.get(id) ?? null);
  }

  count(): Promise<number> {
    return this.#bulk.whenIdle(() => this.records.size);
  }

  insert(record: ProxyRecord): Promise<void> {
    return this.#bulk.whenIdle(() => {
      const key = identityKey(record);
      if (this.identities.has(key) || this.records.has(record.id)) throw new DuplicateProxyError();
      this.identities.add(key);
      this.records.set(record.id, structuredClone(record));
    });
  }

  /**
   * All or nothing, like a transaction. Every part is done in slices with a turn of the event loop
   * between them: 100,000 records held it for ~1.9 s in one piece here (the copies most of it).
   */
  async insertMany(records: readonly ProxyRecord[]): Promise<void> {
    const copies: ProxyRecord[] = [];
    const keys: string[] = [];
    for (let i = 0; i < records.length; i++) {
      copies.push(structuredClone(records[i]!));
      keys.push(identityKey(records[i]!));
      if (i % SLICE === SLICE - 1) await nextTurn();
    }
    await this.#bulk.run(async () => {
      await this.#check(copies, keys);
      for (let i = 0; i < copies.length; i++) {
        this.identities.add(keys[i]!);
        this.records.set(copies[i]!.id, copies[i]!);
        if (i % SLICE === SLICE - 1) await nextTurn();
      }
    });
  }

  /** Rejects with DuplicateProxyError when an identity or id is taken or repeats among `copies`. */
  async #check(copies: readonly ProxyRecord[], keys: readonly string[]): Promise<void> {
    const seenKeys = new Set<string>();
    const ids = new Set<string>();
    for (let i = 0; i < copies.length; i++) {
      const key = keys[i]!;
      const id = copies[i]!.id;
      if (this.identities.has(key) || seenKeys.has(key) || this.records.has(id) || ids.has(id)) {
        throw new DuplicateProxyError();
      }
      seenKeys.add(key);
      ids.add(id);
      if (i % SLICE === SLICE - 1) await nextTurn();
    }
  }

  remove(id: string): Promise<boolean> {
    return this.#bulk.whenIdle(() => {
      const r = this.records.get(id);
      if (!r) return false;
      this.records.delete(id);
      this.identities.delete(identityKey(r));
      return true;
    });
  }

  update(record: ProxyRecord): Promise<boolean> {
    return this.#bulk.whenIdle(() => {
      const old = this.records.get(record.id);
      if (!old) return false;
      const key = identityKey(record);
      const oldKey = identityKey(old);
      if (key !== oldKey && this.identities.has(key)) throw new DuplicateProxyError();
      this.identities.delete(oldKey);
      this.identities.add(key);
      const { exit, ...fields } = structuredClone(record);
      this.records.set(record.id, { ...fields, exit: old.exit ?? null });
      return true;
    });
  }

  setExit(id: string, exit: ExitIdentity | null): Promise<void> {
    return this.#bulk.whenIdle(() => {
      const old = this.records.get(id);
      if (old) this.records.set(id, { ...old, exit: exit === null ? null : { ...exit } });
    });
  }

  // Settings are kept as JSON text so that callers get a copy, exactly as from a database.
  async getSetting(key: string): Promise<unknown> {
    const v = this.settings.get(key);
    return v === undefined ? null : JSON.parse(v);
  }

  async putSetting(key: string, value: unknown): Promise<void> {
    this.settings.set(key, JSON.stringify(value));
  }

  async addSetting(key: string, value: unknown): Promise<boolean> {
    if (this.settings.has(key)) return false;
    this.settings.set(key, JSON.stringify(value));
    return true;
  }

  // Nothing here reaches a disk: a secret stays as given.
  sealSecret(plain: string): string {
    return plain;
  }

  openSecret(sealed: string): string {
    return sealed;
  }

  async close(): Promise<void> {
    this.isOpen = false;
  }
}
