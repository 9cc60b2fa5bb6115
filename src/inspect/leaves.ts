/**
 * Leaf certificates for inspected hosts, one per host, as TLS contexts ready for a server's SNICallback:
 *
 *   const leaves = new LeafCache({ authority, max: config.inspectCacheMax });
 *   const ctx = await leaves.contextFor('example.com');   // or '127.0.0.1', '[::1]'
 *   leaves.size;                                          // contexts kept, for a gauge
 *   leaves.made;                                          // leaves made since start, for a counter
 *
 * A host's first request makes its leaf (concurrent first requests share that one making); later ones
 * get the kept context until less than a third of the leaf's life is left, then the next request makes
 * a new one. At most `max` contexts are kept, the least recently used going first. A name that is not
 * a host (empty, a wildcard, bad characters) is refused with a RotaError (INVALID_URL).
 */
import type { SecureContext } from 'node:tls';
import type { CaSigner } from './ca-make.ts';
import { type InspectHost, inspectHost } from './hosts.ts';
import type { Leaf } from './leaf-make.ts';

/** The longest a leaf is valid (leaf-make.ts holds leaves to it too). */
const MAX_LEAF_LIFE_MS = 30 * 24 * 3_600_000;

/**
 * The certificate maker (and @peculiar/x509 with it, ~10 MB of heap and ~45 ms of start-up) is loaded
 * the first time a leaf is made, not with the server: most gateways never inspect.
 */
const leafMaker = () => import('./leaf-make.ts');

export type { Leaf } from './leaf-make.ts';

export interface LeafCacheOptions {
  /** The CA that signs (an InspectionAuthority). */
  readonly authority: { signer(): Promise<CaSigner> };
  /** Contexts kept at most (ROTA_INSPECT_CACHE). */
  readonly max: number;
  /** Milliseconds since the epoch; leaves are dated, and judged for renewal, by this clock. */
  readonly now?: () => number;
  /** A leaf's validity, at most (and by default) 30 days. */
  readonly lifeMs?: number;
}

/** Leaves made at the same time (see LeafCache #turn). */
const MAKING_AT_ONCE = 1;

export class LeafCache {
  /** Kept leaves by canonical host, least recently used first (a Map keeps insertion order). */
  readonly #ready = new Map<string, Leaf>();
  readonly #pending = new Map<string, Promise<Leaf>>();
  readonly #o: LeafCacheOptions;
  readonly #now: () => number;
  #made = 0;
  /** Leaves being made now, and the makings waiting for their turn (see #turn). */
  #making_ = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(opts: LeafCacheOptions) {
    if (!Number.isSafeInteger(opts.max) || opts.max < 1)
      throw new RangeError('LeafCache: max must be at least 1');
    this.#o = opts;
    this.#now = opts.now ?? Date.now;
  }

  /** Contexts kept. */
  get size(): number {
    return this.#ready.size;
  }

  /** Leaves made since start (each a new key pair and a signature). */
  get made(): number {
    return this.#made;
  }

  /** Whether a context for `host` is kept and fresh, or being made: asking for it makes no new leaf. */
  has(input: string): boolean {
    let name: string;
    try {
      name = inspectHost(input).name;
    } catch {
      return false;
    }
    const hit = this.#ready.get(name);
    return (hit !== undefined && this.#now() < hit.renewAt) || this.#pending.has(name);
  }

  /** The TLS context whose certificate names `host`. */
  async contextFor(host: string): Promise<SecureContext> {
    return (await this.leafFor(host)).context;
  }

  /** The leaf for `host`: its context, certificate and validity. */
  leafFor(input: string): Promise<Leaf> {
    let host: InspectHost;
    try {
      host = inspectHost(input);
    } catch (err) {
      return Promise.reject(err);
    }
    const hit = this.#ready.get(host.name);
    if (hit !== undefined && this.#now() < hit.renewAt) {
      this.#ready.delete(host.name);
      this.#ready.set(host.name, hit);
      return Promise.resolve(hit);
    }
    return this.#making(host);
  }

  #making(host: InspectHost): Promise<Leaf> {
    const pending = this.#pending.get(host.name);
    if (pending !== undefined) return pending;
    const made = this.#make(host).finally(() => this.#pending.delete(host.name));
    this.#pending.set(host.name, made);
    return made;
  }

  /**
   * One leaf is made at a time. Signing one runs ~5-20 ms of JavaScript (ASN.1 in @peculiar/x509; the key
   * pair itself is generated off the loop): a burst of new hosts made all at once held the event loop
   * for hundreds of milliseconds. In turn, with a turn of the loop between two leaves, no request waits
   * for more than one leaf's work.
   */
  async #turn(): Promise<void> {
    if (this.#making_ < MAKING_AT_ONCE) {
      this.#making_++;
      return;
    }
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  #next(): void {
    const next = this.#waiting.shift();
    if (next === undefined) this.#making_--;
    else setImmediate(next);
  }

  async #make(host: InspectHost): Promise<Leaf> {
    const ca = await this.#o.authority.signer();
    await this.#turn();
    let leaf: Leaf;
    try {
      this.#made++;
      const { makeLeaf } = await leafMaker();
      leaf = await makeLeaf(ca, host, this.#now(), this.#o.lifeMs ?? MAX_LEAF_LIFE_MS);
    } finally {
      this.#next();
    }
    this.#ready.delete(host.name);
    this.#ready.set(host.name, leaf);
    for (const oldest of this.#ready.keys()) {
      if (this.#ready.size <= this.#o.max) break;
      this.#ready.delete(oldest);
    }
    return leaf;
  }
}
