import { RotaError } from '../errors/rota-error.ts';
import type { ExitIdentity, ProxyRecord } from '../pool/types.ts';

export type StorageBackend = 'memory' | 'sqlite' | 'postgres';

/**
 * Durable home of the pool and of runtime settings. Every implementation passes `contract.test.ts`.
 * Methods resolve only once the write is durable for that backend.
 */
export interface ProxyStore {
  readonly backend: StorageBackend;
  /** True once open() succeeded and until close(). */
  readonly connected: boolean;
  open(): Promise<void>;
  /**
   * Every record in creation order, a page at a time: start-up reads hundreds of thousands, and one
   * await per page instead of per record took ~100 ms off loading 100,000 (--cpu-prof of a start with
   * 100,000 proxies in SQLite).
   */
  loadPages(): AsyncIterable<readonly ProxyRecord[]>;
  get(id: string): Promise<ProxyRecord | null>;
  count(): Promise<number>;
  /** Rejects with DuplicateProxyError when the identity (URL + username) is taken. */
  insert(record: ProxyRecord): Promise<void>;
  /**
   * Every record in one transaction, in the given order (bulk import): all or nothing. Rejects with
   * DuplicateProxyError, and stores none of them, when an identity or id is taken or repeats in the batch.
   */
  insertMany(records: readonly ProxyRecord[]): Promise<void>;
  /** Resolves false when no such id. */
  remove(id: string): Promise<boolean>;
  /**
   * Rewrites what a PATCH may change (credentials, templates, weight, country, tags, label) of the record
   * with this id; never its address, creation time or exit. Resolves false when no such id; rejects with
   * DuplicateProxyError when the new username makes the identity one another record has.
   */
  update(record: ProxyRecord): Promise<boolean>;
  /** The exit a health check saw (null: forget it); nothing when no such id. */
  setExit(id: string, exit: ExitIdentity | null): Promise<void>;
  getSetting(key: string): Promise<unknown>;
  putSetting(key: string, value: unknown): Promise<void>;
  /**
   * Stores `value` under `key` only when the key holds nothing yet, in one atomic step: resolves true when
   * this call's value was stored, false when another was there (and stays). Two instances making the same
   * first value at once (inspection's CA) agree on the one that landed first.
   */
  addSetting(key: string, value: unknown): Promise<boolean>;
  /**
   * A secret kept inside a setting (a source's header value), as text: sealed with the credentials' key by
   * the SQL stores, as given by the memory store (which writes nothing anywhere). `context` is bound to it:
   * opened under another context it fails (CredentialDecryptError).
   */
  sealSecret(plain: string, context: string): string;
  openSecret(sealed: string, context: string): string;
  close(): Promise<void>;
}

export class DuplicateProxyError extends RotaError {
  constructor() {
    super('PROXY_ALREADY_EXISTS', 'a proxy with the same URL and username already exists');
    this.name = 'DuplicateProxyError';
  }
}
