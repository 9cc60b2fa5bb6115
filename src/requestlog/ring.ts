/**
 * A fixed-size ring: push() overwrites the oldest item once full, and hands it back. The slots are one
 * array allocated up front; nothing else is allocated per push.
 */
export class Ring<T> {
  readonly #slots: (T | undefined)[];
  #next = 0;
  #size = 0;

  readonly capacity: number;

  constructor(capacity: number) {
    this.capacity = capacity;
    this.#slots = new Array<T | undefined>(capacity).fill(undefined);
  }

  get size(): number {
    return this.#size;
  }

  /** Adds `item`; returns the item it replaced, if the ring was full. */
  push(item: T): T | undefined {
    const old = this.#slots[this.#next];
    this.#slots[this.#next] = item;
    this.#next = (this.#next + 1) % this.capacity;
    if (this.#size < this.capacity) {
      this.#size++;
      return undefined;
    }
    return old;
  }

  /** Newest first; stops when `visit` returns false. */
  newestFirst(visit: (item: T) => boolean): void {
    for (let k = 1; k <= this.#size; k++) {
      const item = this.#slots[(this.#next - k + this.capacity) % this.capacity] as T;
      if (!visit(item)) return;
    }
  }
}
