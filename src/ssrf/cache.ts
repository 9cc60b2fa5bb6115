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
 *
 * A hit on the most recently used key changes no order, so it is not re-inserted: a scraper hammering
 * one site hits the same key on every request, and each delete + set pair used up a slot of the Map's
 * table, which V8 then rebuilt (a new table every few hits, ~150 bytes a request under load).
 */
export class BoundedCache<V> {
  readonly #slots = new Map<string, Slot<V>>();
  readonly #max: number;
  readonly #ttlMs: number;
  readonly #now: Clock;
  /** The most recently inserted or re-inserted key: the last in the Map's order. */
  #newest: string | undefined;

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
    // Entries without a time to live never read the clock.
    if (slot.expires !== Number.POSITIVE_INFINITY && slot.expires <= this.#now()) {
      this.#slots.delete(key);
      if (key === this.#newest) this.#newest = undefined;
      return undefined;
    }
    if (key !== this.#newest) {
      this.#slots.delete(key);
      this.#slots.set(key, slot);
      this.#newest = key;
    }
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
    this.#newest = key;
  }
}
