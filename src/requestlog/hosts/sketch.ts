/**
 * Space-Saving (Metwally, Agrawal, El Abbadi, 2005): the heaviest keys of a stream in `capacity` slots.
 * A key not held takes the slot of the lightest one, inheriting its count (kept as `error`, the most it
 * may be over). Any key seen more than total/capacity times is held. The lightest is the root of a
 * min-heap, so each touch costs O(log capacity), whatever the number of distinct keys.
 */

export interface Held<V> {
  key: string;
  count: number;
  /** How much of `count` may belong to the keys this slot held before. */
  error: number;
  value: V;
  /** Position in the heap. */
  at: number;
}

export class SpaceSaving<V> {
  readonly #byKey = new Map<string, Held<V>>();
  readonly #heap: Held<V>[] = [];

  readonly capacity: number;

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get size(): number {
    return this.#heap.length;
  }

  get(key: string): Held<V> | undefined {
    return this.#byKey.get(key);
  }

  /**
   * Counts one more `key`; `fresh` gives a new value for a key taking a slot, `reuse` resets the value of
   * the slot it takes over (its old key's figures must not be shown as the new key's).
   */
  touch(key: string, fresh: () => V, reuse: (v: V) => void): Held<V> {
    let h = this.#byKey.get(key);
    if (h === undefined) {
      if (this.#heap.length < this.capacity) {
        h = { key, count: 0, error: 0, value: fresh(), at: this.#heap.length };
        this.#heap.push(h);
      } else {
        h = this.#heap[0]!;
        this.#byKey.delete(h.key);
        h.key = key;
        h.error = h.count;
        reuse(h.value);
      }
      this.#byKey.set(key, h);
    }
    h.count++;
    this.#down(h.at);
    return h;
  }

  /** Sets every count anew (a window moved on) and restores the heap. */
  recount(countOf: (h: Held<V>) => number): void {
    for (const h of this.#heap) {
      const c = countOf(h);
      h.error = Math.min(h.error, c);
      h.count = c;
    }
    for (let i = (this.#heap.length >> 1) - 1; i >= 0; i--) this.#down(i);
  }

  values(): IterableIterator<Held<V>> {
    return this.#byKey.values();
  }

  #down(i: number): void {
    const heap = this.#heap;
    const n = heap.length;
    const h = heap[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && heap[r]!.count < heap[l]!.count ? r : l;
      if (heap[c]!.count >= h.count) break;
      heap[i] = heap[c]!;
      heap[i]!.at = i;
      i = c;
    }
    heap[i] = h;
    h.at = i;
  }
}
