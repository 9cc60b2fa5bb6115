import { identityKey, type ProxyRecord } from '../pool/types.ts';
import { DuplicateProxyError, type ProxyStore } from './types.ts';

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
    // Checked in full before anything is kept: all or nothing, like a transaction.
    const keys = new Set<string>();
    const ids = new Set<string>();
    for (const r of records) {
      const key = identityKey(r);
      if (this.identities.has(key) || keys.has(key) || this.records.has(r.id) || ids.has(r.id)) {
        throw new DuplicateProxyError();
      }
      keys.add(key);
      ids.add(r.id);
    }
    for (const r of records) {
      this.identities.add(identityKey(r));
      this.records.set(r.id, structuredClone(r));
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
