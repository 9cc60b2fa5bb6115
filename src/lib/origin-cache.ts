/**
 * A parsed origin with the strings read on every request computed once: URL's `origin` and `host` are
 * getters that build a new string at each read (a heap profile of the listener's GET path showed them).
 * Read only, like everything the cache hands out.
 */
export class ParsedOrigin extends URL {
  /** `scheme://host:port`, as `origin` gives it. */
  readonly text: string;
  /** `host:port` (the port only when not the scheme's default), as `host` gives it. */
  readonly hostPort: string;

  constructor(origin: string) {
    super(origin);
    this.text = this.origin;
    this.hostPort = this.host;
  }
}

/**
 * Parsed URL origins (`scheme://host:port`), each parsed once. A proxy or a listener sees the same few
 * origins over and over, and WHATWG parsing costs more than the rest of the code that reads them; the
 * URLs handed out are shared, so callers only read them. Bounded so that a caller spraying origins
 * cannot grow it (it starts over when full).
 */
export class OriginCache {
  readonly #parsed = new Map<string, ParsedOrigin>();
  readonly #max: number;

  constructor(max = 256) {
    this.#max = max;
  }

  get size(): number {
    return this.#parsed.size;
  }

  /** The parsed origin; throws (TypeError) when it does not parse. */
  get(origin: string): ParsedOrigin {
    let url = this.#parsed.get(origin);
    if (url === undefined) {
      url = new ParsedOrigin(origin);
      if (this.#parsed.size >= this.#max) this.#parsed.clear();
      this.#parsed.set(origin, url);
    }
    return url;
  }
}
