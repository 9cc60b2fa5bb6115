import type { TObject } from 'typebox';
import { matchesSchema } from '../lib/schema-check.ts';
import type { ProxyStore } from '../store/types.ts';

/**
 * A policy that `PUT` changes at runtime and the store keeps (retry policy, ban policy). Only the fields
 * a PUT set are stored, so a field nobody changed at runtime keeps following its environment variable
 * across restarts; a stored value that is no longer valid (a database from another version) is ignored.
 */
export class StoredPolicy<T extends object> {
  #current: Readonly<T>;
  #overrides: Readonly<Partial<T>> = {} as Partial<T>;
  readonly #base: Readonly<T>;
  readonly #store: ProxyStore;
  readonly #key: string;
  readonly #schema: TObject;
  readonly #listeners: (() => void)[] = [];

  constructor(store: ProxyStore, key: string, schema: TObject, base: T) {
    this.#store = store;
    this.#key = key;
    this.#schema = schema;
    this.#base = Object.freeze({ ...base });
    this.#current = this.#base;
  }

  /** Applies what earlier PUTs stored; true when something was. */
  async load(): Promise<boolean> {
    const saved = await this.#store.getSetting(this.#key);
    if (!saved || typeof saved !== 'object' || Array.isArray(saved)) return false;
    const overrides: Record<string, unknown> = {};
    for (const [key, schema] of Object.entries(this.#schema.properties)) {
      const v = (saved as Record<string, unknown>)[key];
      if (v !== undefined && matchesSchema(schema, v)) overrides[key] = v;
    }
    this.#overrides = Object.freeze(overrides as Partial<T>);
    this.#current = Object.freeze({ ...this.#base, ...this.#overrides });
    return true;
  }

  get(): Readonly<T> {
    return this.#current;
  }

  /** The fields that PUTs set (the ones the store keeps); the others follow the base. */
  get overrides(): Readonly<Partial<T>> {
    return this.#overrides;
  }

  /** Absent fields stay. Persist first, then swap: an answer of 200 means the change is durable. */
  async update(patch: Partial<T>): Promise<Readonly<T>> {
    const overrides = Object.freeze({ ...this.#overrides, ...patch });
    const next = Object.freeze({ ...this.#base, ...overrides });
    await this.#store.putSetting(this.#key, overrides);
    this.#overrides = overrides;
    this.#current = next;
    for (const l of this.#listeners) l();
    return next;
  }

  /** Told after every update made here (shared state tells the other instances). */
  onChange(listener: () => void): void {
    this.#listeners.push(listener);
  }
}
