import { identityKey, type ProxyRecord } from '../pool/types.ts';
import { DuplicateProxyError, type ProxyStore } from './types.ts';

/** Records copied between two turns of the event loop in insertMany (~10 ms of work here). */
const COPY_SLICE = 1000;

/** Keeps everything in this process: the default, and what tests use. */
export class MemoryStore implements ProxyStore {
  readonly backend = 'memory' as const;
  private readonly records = new Map<string, ProxyRecord>();
  private readonly identities = new Set<string>();
  private readonly settings = new Map<string, string>();
  private isOpen = false;

  get connected(): boolean {
    return this.isOpen;
  }

  async open(): Promise<void> {
    this.isOpen = true;
  }

  async *loadPages(): AsyncIterable<readonly ProxyRecord[]> {
    if (this.records.size > 0) yield [...this.records.values()];
  }

  async get(id: string): Promise<ProxyRecord | null> {
    return this.records.get(id) ?? null;
  }

  async count(): Promise<number> {
    return this.records.size;
  }

  async insert(record: ProxyRecord): Promise<void> {
    const key = identityKey(record);
    if (this.identities.has(key) || this.records.has(record.id)) throw new DuplicateProxyError();
    this.identities.add(key);
    this.records.set(record.id, structuredClone(record));
  }

  async insertMany(records: readonly ProxyRecord[]): Promise<void> {
    // The copies are most of the cost (100,000 records: ~1.5 s here): made in slices, with a turn of the
    // event loop between them, before anything is checked.
    const copies: ProxyRecord[] = [];
    const keys: string[] = [];
    for (let i = 0; i < records.length; i++) {
      copies.push(structuredClone(records[i]!));
      keys.push(identityKey(records[i]!));
      if (i % COPY_SLICE === COPY_SLICE - 1) await new Promise((r) => setImmediate(r));
    }
    // Checked in full, then kept, in one piece: all or nothing, and no other write in between.
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
    }
    for (let i = 0; i < copies.length; i++) {
      this.identities.add(keys[i]!);
      this.records.set(copies[i]!.id, copies[i]!);
    }
  }

  async remove(id: string): Promise<boolean> {
    const r = this.records.get(id);
    if (!r) return false;
    this.records.delete(id);
    this.identities.delete(identityKey(r));
    return true;
  }

  // Settings are kept as JSON text so that callers get a copy, exactly as from a database.
  async getSetting(key: string): Promise<unknown> {
    const v = this.settings.get(key);
    return v === undefined ? null : JSON.parse(v);
  }

  async putSetting(key: string, value: unknown): Promise<void> {
    this.settings.set(key, JSON.stringify(value));
  }

  async close(): Promise<void> {
    this.isOpen = false;
  }
}
