/**
 * The cool-downs of (proxy, target host) pairs: a proxy that a site banned is not picked for that site
 * until its cool-down ends, and stays in use for every other site.
 *
 * Durations double on each repeat, up to max_cooldown_s; a Retry-After from the site is honoured when
 * longer (up to max_cooldown_s too). A repeat is a ban of the same pair within max_cooldown_s of its
 * last cool-down's end; later, the count starts again at 1, so an entry is kept that long after its end.
 * The table is bounded: past `max` entries the one banned longest ago is dropped.
 *
 * A provider gateway's bans are per exit, keyed `<gateway id>#<provider session>` (outbound/gateways.ts):
 * the gateway itself is never cooled by them; listings show the gateway's id and a digest of the exit.
 */
import { createHash } from 'node:crypto';

/** The pool entry of a cool-down key, and the digest of a gateway exit's provider session (else null). */
export function keyParts(key: string): { entryId: string; exit: string | null } {
  const i = key.indexOf('#');
  if (i === -1) return { entryId: key, exit: null };
  const exit = createHash('sha256')
    .update(key.slice(i + 1))
    .digest('hex')
    .slice(0, 12);
  return { entryId: key.slice(0, i), exit };
}

export interface Cooldown {
  readonly proxyId: string;
  readonly host: string;
  /** Epoch ms. */
  until: number;
  /** Epoch ms: when the ban behind `until` was recorded (this instance's clock, or the notice's arrival). */
  since: number;
  count: number;
  /** In a listing (active()): a gateway exit's digest, the key's proxy id being the gateway's. */
  readonly exit?: string;
}

export interface BanTerms {
  readonly cooldownS: number;
  readonly maxCooldownS: number;
  /** From the site's Retry-After, when it sent one. */
  readonly retryAfterS: number | null;
}

export class CooldownTable {
  /** host → proxy id → entry: the selection's per-call lookup is one host map, then one get per member. */
  readonly #byHost = new Map<string, Map<string, Cooldown>>();
  /** Every entry, least recently banned first. */
  readonly #order = new Set<Cooldown>();
  readonly #now: () => number;
  readonly #max: number;
  /** Gateways with exits in the table (keys `id#session`), for removeProxy. */
  readonly #gateways = new Set<string>();

  constructor(opts: { now: () => number; max?: number }) {
    this.#now = opts.now;
    this.#max = opts.max ?? 100_000;
  }

  get size(): number {
    return this.#order.size;
  }

  /** Records a ban of `proxyId` by `host`; returns the pair's entry. */
  ban(proxyId: string, host: string, terms: BanTerms): Cooldown {
    const now = this.#now();
    let perHost = this.#byHost.get(host);
    if (perHost === undefined) {
      perHost = new Map();
      this.#byHost.set(host, perHost);
    }
    const prev = perHost.get(proxyId);
    const repeat = prev !== undefined && now - prev.until <= terms.maxCooldownS * 1000;
    const count = repeat ? prev.count + 1 : 1;
    const doubled = terms.cooldownS * 2 ** Math.min(count - 1, 30);
    const seconds = Math.min(Math.max(doubled, terms.retryAfterS ?? 0), terms.maxCooldownS);
    const entry: Cooldown = prev ?? { proxyId, host, until: 0, since: now, count: 0 };
    entry.until = Math.max(entry.until, now + seconds * 1000);
    entry.since = now;
    entry.count = count;
    perHost.set(proxyId, entry);
    this.#noteGateway(proxyId);
    this.#order.delete(entry);
    this.#order.add(entry);
    this.#bound();
    return entry;
  }

  /** Another instance's ban (shared state): the same cool-down here. */
  applyRemote(proxyId: string, host: string, until: number, count: number): void {
    let perHost = this.#byHost.get(host);
    if (perHost === undefined) {
      perHost = new Map();
      this.#byHost.set(host, perHost);
    }
    const entry = perHost.get(proxyId) ?? { proxyId, host, until: 0, since: 0, count: 0 };
    if (until > entry.until) entry.since = this.#now();
    entry.until = Math.max(entry.until, until);
    entry.count = Math.max(entry.count, count);
    perHost.set(proxyId, entry);
    this.#noteGateway(proxyId);
    this.#order.delete(entry);
    this.#order.add(entry);
    this.#bound();
  }

  /** The pairs of `host` (active or not), or undefined when it has none: fetched once per selection. */
  forHost(host: string): ReadonlyMap<string, Cooldown> | undefined {
    return this.#byHost.get(host);
  }

  now(): number {
    return this.#now();
  }

  /** Active cool-downs, least recently banned first; of one host when given. */
  active(host?: string): Cooldown[] {
    const now = this.#now();
    const from = host === undefined ? this.#order : (this.#byHost.get(host)?.values() ?? []);
    const out: Cooldown[] = [];
    for (const c of from) if (c.until > now) out.push(c.proxyId.includes('#') ? listed(c) : c);
    return out;
  }

  activeCount(): number {
    const now = this.#now();
    let n = 0;
    for (const c of this.#order) if (c.until > now) n++;
    return n;
  }

  /** Told when cool-downs are cleared here (shared state tells the other instances). */
  onClear: ((host: string | null) => void) | null = null;

  /** Forgets the pairs of `host` (all pairs without it); returns how many active ones ended. */
  clear(host?: string, remote = false): number {
    if (!remote) this.onClear?.(host ?? null);
    const gone = this.active(host).length;
    if (host === undefined) {
      this.#byHost.clear();
      this.#order.clear();
      return gone;
    }
    for (const c of this.#byHost.get(host)?.values() ?? []) this.#order.delete(c);
    this.#byHost.delete(host);
    return gone;
  }

  /** Forgets the pairs of `proxyId`, and of its exits when it is a gateway. */
  removeProxy(proxyId: string): void {
    // Only a gateway that had exits banned is worth a walk of every pair; any other, one get per host.
    const exits = this.#gateways.delete(proxyId) ? `${proxyId}#` : null;
    for (const [host, perHost] of this.#byHost) {
      const c = perHost.get(proxyId);
      if (c !== undefined) {
        perHost.delete(proxyId);
        this.#order.delete(c);
      }
      if (exits !== null) {
        for (const [key, e] of perHost) {
          if (!key.startsWith(exits)) continue;
          perHost.delete(key);
          this.#order.delete(e);
        }
      }
      if (perHost.size === 0) this.#byHost.delete(host);
    }
  }

  #noteGateway(key: string): void {
    const i = key.indexOf('#');
    if (i !== -1) this.#gateways.add(key.slice(0, i));
  }

  #bound(): void {
    while (this.#order.size > this.#max) {
      const oldest = this.#order.values().next().value;
      if (oldest === undefined) return;
      this.#order.delete(oldest);
      const perHost = this.#byHost.get(oldest.host);
      perHost?.delete(oldest.proxyId);
      if (perHost?.size === 0) this.#byHost.delete(oldest.host);
    }
  }
}

/** A gateway exit's cool-down as listed: the gateway's id, the exit's digest (never its session). */
function listed(c: Cooldown): Cooldown {
  const { entryId, exit } = keyParts(c.proxyId);
  return { ...c, proxyId: entryId, ...(exit === null ? {} : { exit }) };
}
