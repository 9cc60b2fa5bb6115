/**
 * Parsed URL origins (`scheme://host:port`), each parsed once. A proxy or a listener sees the same few
 * origins over and over, and WHATWG parsing costs more than the rest of the code that reads them; the
 * URLs handed out are shared, so callers only read them. Bounded so that a caller spraying origins
 * cannot grow it (it starts over when full).
 */
export class OriginCache {
  readonly #parsed = new Map<string, URL>();
  readonly #max: number;

  constructor(max = 256) {
    this.#max = max;
  }

  get size(): number {
    return this.#parsed.size;
  }

  /** The parsed origin; throws (TypeError) when it does not parse. */
  get(origin: string): URL {
    let url = this.#parsed.get(origin);
    if (url === undefined) {
      url = new URL(origin);
      if (this.#parsed.size >= this.#max) this.#parsed.clear();
      this.#parsed.set(origin, url);
    }
    return url;
  }
}
