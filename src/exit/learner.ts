/**
 * Learns each proxy's exit address (ROTA_EXIT_IP_URL) after a passed health check: one GET of the
 * operator's echo endpoint through the proxy, its answer (the address the endpoint saw) recorded on the
 * member with the GeoIP country and ASN (ROTA_GEOIP_DB), persisted (Pool.setExit). Not for gateways
 * (a username_template): their exit changes by design. A static proxy whose exit moved is logged and
 * counted (rota_exit_changes_total): a provider may have swapped the address under it. One whose exit
 * moves at ROTATING_AFTER checks in a row is a rotating port, not a static exit: it is logged once, its
 * exit is not recorded (sharing one with another member would mean nothing, and each health run would
 * write and tell every instance), and it is watched again from its next steady exit.
 *
 *   health check passed ──▶ GET echo through the proxy ──▶ exit_ip ──▶ GeoIP ──▶ pool.setExit
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import type { Pool, ProxyEntry } from '../pool/pool.ts';
import { type ExitIdentity, isGateway } from '../pool/types.ts';
import type { DispatcherCache } from '../upstream/dispatchers.ts';
import { send } from '../upstream/send.ts';
import { exitAddress } from './echo.ts';
import type { GeoIp } from './geoip.ts';

export interface ExitLearnerDeps {
  readonly pool: Pool;
  readonly dispatchers: DispatcherCache;
  /** ROTA_EXIT_IP_URL */
  readonly url: string;
  readonly geo: GeoIp | null;
  readonly logger: Logger;
  readonly registry: Registry;
  readonly timeoutMs: number;
  readonly now: () => number;
  readonly monotonic: () => number;
}

/** Checks in a row with a new exit after which a proxy is taken for a rotating one. */
export const ROTATING_AFTER = 3;

export class ExitLearner {
  readonly #d: ExitLearnerDeps;
  readonly #changes: Counter;
  /** Per member: the exit its last check saw and how many checks in a row saw a new one. */
  readonly #last = new WeakMap<ProxyEntry, { readonly ip: string; readonly moves: number }>();

  constructor(d: ExitLearnerDeps) {
    this.#d = d;
    this.#changes = new Counter({
      name: 'rota_exit_changes_total',
      help: 'Static proxies seen exiting from another address than the one last recorded (ROTA_EXIT_IP_URL)',
      registers: [d.registry],
    });
  }

  /** Asks the echo endpoint through `e` and records what it saw; never throws (nothing learned then). */
  async learn(e: ProxyEntry): Promise<void> {
    if (isGateway(e.record)) return;
    const ip = await this.#ask(e);
    // Asked of a static proxy; a PATCH may have made it a gateway meanwhile (whose exit is not kept).
    if (ip === null || this.#d.pool.get(e.record.id) !== e || isGateway(e.record)) return;
    const old = e.exit;
    const lastIp = this.#last.get(e)?.ip ?? old?.ip;
    const moves = lastIp === undefined || lastIp === ip ? 0 : (this.#last.get(e)?.moves ?? 0) + 1;
    this.#last.set(e, { ip, moves });
    if (moves > 0) this.#changes.inc();
    if (moves >= ROTATING_AFTER) {
      if (moves === ROTATING_AFTER) {
        this.#d.logger.warn(
          { proxy_id: e.record.id, proxy: e.url, checks: moves },
          'a proxy exits from a new address at every check: taken for a rotating proxy, its exit is not recorded',
        );
      }
      return this.#store(e, null);
    }
    if (old !== null && old.ip !== ip) {
      this.#d.logger.warn(
        { proxy_id: e.record.id, proxy: e.url, exit_ip_was: old.ip, exit_ip: ip },
        "a static proxy's exit address changed",
      );
    }
    const geo = this.#d.geo?.lookup(ip) ?? { country: null, asn: null };
    return this.#store(e, { ip, seenAt: this.#d.now(), country: geo.country, asn: geo.asn });
  }

  async #store(e: ProxyEntry, exit: ExitIdentity | null): Promise<void> {
    try {
      await this.#d.pool.setExit(e, exit);
    } catch (err) {
      this.#d.logger.warn({ err, proxy_id: e.record.id }, 'exit address not stored');
    }
  }

  async #ask(e: ProxyEntry): Promise<string | null> {
    try {
      const res = await send(this.#d.dispatchers.get(e.record), {
        url: new URL(this.#d.url),
        method: 'GET',
        headers: { 'user-agent': 'rota-exit-check', accept: 'application/json, text/plain' },
        body: null,
        deadline: this.#d.monotonic() + this.#d.timeoutMs,
        maxResponseBytes: 4096,
      });
      if (res.statusCode !== 200) return null;
      return exitAddress(res.body);
    } catch (err) {
      this.#d.logger.debug({ err, proxy_id: e.record.id }, 'exit address check failed');
      return null;
    }
  }
}

/** The other members last seen exiting from the address of member `id` (a ban on one is a ban on all). */
export function exitSharers(pool: Pool, id: string): string[] {
  const e = pool.get(id);
  const ip = e?.exit?.ip;
  if (ip === undefined) return [];
  const out: string[] = [];
  for (const other of pool.exits.at(ip)) if (other !== e) out.push(other.record.id);
  return out;
}
