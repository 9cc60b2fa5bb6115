import { type CallRecord, ownFault } from '../../metrics/calls.ts';
import { type Held, SpaceSaving } from './sketch.ts';
import { SLOT_MS, SLOTS, SlotStats, type Totals } from './slots.ts';

/**
 * Per-site analytics: the busiest target hosts over the last 15 minutes and hour, kept in a Space-Saving
 * sketch of ROTA's top hosts (1,000 by default), and for each host the same figures per proxy (its 16
 * busiest proxies there). Fed by the request log with every call, and its bytes once it is over. Bans are counted apart from
 * failures: a host's failures are its calls that failed; a proxy's are its own faults (proxy errors,
 * timeouts), so a site refusing it does not lower its success rate there.
 *
 * Memory is fixed by the two bounds: (1 + 16) figure sets of ~1.6 KB per host held.
 */

export const MAX_HOSTS = 1_000;
const MAX_PROXIES_PER_HOST = 16;
/** 15 minutes: three 5-minute slots, the current one included. */
const RECENT_SLOTS = 3;

interface HostFigures {
  readonly all: SlotStats;
  readonly proxies: SpaceSaving<SlotStats>;
}

export interface HostRow {
  readonly host: string;
  /** How much of the hour's count may belong to hosts this slot held before (Space-Saving). */
  readonly count_error: number;
  readonly last_15m: Totals;
  readonly last_1h: Totals;
}

export interface ProxyRow {
  readonly proxy_id: string;
  readonly last_15m: Totals;
  readonly last_1h: Totals;
}

const freshStats = () => new SlotStats();
const clearStats = (s: SlotStats) => s.clear();

export class HostAnalytics {
  readonly #hosts: SpaceSaving<HostFigures>;
  readonly #now: () => number;
  #slot = -1;

  constructor(opts: { now: () => number; maxHosts?: number }) {
    this.#now = opts.now;
    this.#hosts = new SpaceSaving<HostFigures>(opts.maxHosts ?? MAX_HOSTS);
  }

  get size(): number {
    return this.#hosts.size;
  }

  /**
   * One call as the engine reports it (bytes come later: addBytes). `now`: the caller's reading of the
   * clock, if it has one. One pass over the attempts: the call's outcome (entry.ts outcomeOf: a success
   * unless the answer delivered was a ban; a failure when it did not answer) and whether a ban was
   * seen (banSeenOf) are read there too.
   */
  recordCall(c: CallRecord, now: number = this.#now()): void {
    const host = c.host;
    if (host === undefined) return;
    this.#roll(now);
    const h = this.#hosts.touch(host, freshHost, clearHost).value;
    const n = c.deliveredAttempt;
    let ban = false;
    let deliveredBan = false;
    for (const a of c.attempts) {
      const p = h.proxies.touch(a.proxyId, freshStats, clearStats).value;
      const banned = a.kind === 'banned';
      const fault = ownFault(a);
      p.add(now, !banned && !fault, banned, fault, a.latencyMs);
      if (banned) ban = true;
      if (n === undefined ? a.outcome === 'success' : a.attempt === n) deliveredBan = banned;
    }
    h.all.add(now, c.ok && !deliveredBan, ban, !c.ok, c.latencyMs);
  }

  /** A call's bytes, once its answer or tunnel is over: the host's, and the delivering proxy's there. */
  addBytes(host: string, proxyId: string | undefined, bytes: number, now?: number): void {
    const h = this.#hosts.get(host)?.value;
    if (h === undefined) return;
    const t = now ?? this.#now();
    h.all.addBytes(t, bytes);
    if (proxyId !== undefined) h.proxies.get(proxyId)?.value.addBytes(t, bytes);
  }

  /** The busiest hosts of the last hour, at most `limit`. */
  top(limit: number): HostRow[] {
    const now = this.#now();
    this.#roll(now);
    const held = [...this.#hosts.values()].filter((h) => h.count > 0);
    held.sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : 1));
    return held.slice(0, limit).map((h) => hostRow(h, now));
  }

  /** One host's figures and its proxies', or null when it is not among the hosts held. */
  host(host: string): { row: HostRow; proxies: ProxyRow[] } | null {
    const now = this.#now();
    this.#roll(now);
    const h = this.#hosts.get(host);
    if (h === undefined) return null;
    const proxies = [...h.value.proxies.values()]
      .map((p) => ({
        proxy_id: p.key,
        last_15m: p.value.totals(now, RECENT_SLOTS),
        last_1h: p.value.totals(now, SLOTS),
      }))
      .filter((p) => p.last_1h.requests > 0)
      .sort((a, b) => b.last_1h.requests - a.last_1h.requests);
    return { row: hostRow(h, now), proxies };
  }

  /** Once per slot: counts are the last hour's again, so that hosts gone quiet give way to new ones. */
  #roll(now: number): void {
    const slot = Math.floor(now / SLOT_MS);
    if (slot === this.#slot) return;
    this.#slot = slot;
    this.#hosts.recount((h) => h.value.all.requests(now));
    for (const h of this.#hosts.values()) h.value.proxies.recount((p) => p.value.requests(now));
  }
}

function freshHost(): HostFigures {
  return { all: new SlotStats(), proxies: new SpaceSaving<SlotStats>(MAX_PROXIES_PER_HOST) };
}

function clearHost(h: HostFigures): void {
  h.all.clear();
  h.proxies.recount(() => 0);
  for (const p of h.proxies.values()) p.value.clear();
}

function hostRow(h: Held<HostFigures>, now: number): HostRow {
  return {
    host: h.key,
    count_error: h.error,
    last_15m: h.value.all.totals(now, RECENT_SLOTS),
    last_1h: h.value.all.totals(now, SLOTS),
  };
}
