/** Milliseconds on some monotonic-enough clock; injectable so tests can move time. */
export type Clock = () => number;

export interface BoundedCacheOptions {
  /** Entries kept; the least recently used one goes first. */
  readonly max: number;
  /** How long an entry is believed; omitted means until it is evicted. */
  readonly ttlMs?: number;
  readonly now?: Clock;
}

interface Slot<V> {
  readonly value: V;
  readonly expires: number;
}

/**
 * A small LRU with an optional time to live. A Map keeps insertion order, so re-inserting on every hit
 * makes the first key the least recently used one: eviction is O(1) without a linked list.
 */
export class BoundedCache<V> {
  readonly #slots = new Map<string, Slot<V>>();
  readonly #max: number;
  readonly #ttlMs: number;
  readonly #now: Clock;

  constructor(opts: BoundedCacheOptions) {
    this.#max = Math.max(1, Math.floor(opts.max));
    this.#ttlMs = opts.ttlMs ?? Number.POSITIVE_INFINITY;
    this.#now = opts.now ?? Date.now;
  }

  get size(): number {
    return this.#slots.size;
  }

  /** The value, or undefined when it was never stored, was evicted or has expired. */
  get(key: string): V | undefined {
    const slot = this.#slots.get(key);
    if (slot === undefined) return undefined;
    this.#slots.delete(key);
    // Entries without a time to live never read the clock.
    if (slot.expires !== Number.POSITIVE_INFINITY && slot.expires <= this.#now()) return undefined;
    this.#slots.set(key, slot);
    return slot.value;
  }

  set(key: string, value: V): void {
    this.#slots.delete(key);
    if (this.#slots.size >= this.#max) {
      const oldest = this.#slots.keys().next();
      if (!oldest.done) this.#slots.delete(oldest.value);
    }
    const ttl = this.#ttlMs;
    this.#slots.set(key, { value, expires: ttl === Number.POSITIVE_INFINITY ? ttl : this.#now() + ttl });
  }
}
