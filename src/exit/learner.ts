/**
 * Learns each proxy's exit address (ROTA_EXIT_IP_URL) after a passed health check: one GET of the
 * operator's echo endpoint through the proxy, its answer (the address the endpoint saw) recorded on the
 * member with the GeoIP country and ASN (ROTA_GEOIP_DB), persisted (Pool.setExit). Not for gateways
 * (a username_template): their exit changes by design. A static proxy whose exit moved is logged and
 * counted (rota_exit_changes_total): a provider may have swapped the address under it.
 *
 *   health check passed ──▶ GET echo through the proxy ──▶ exit_ip ──▶ GeoIP ──▶ pool.setExit
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import type { Pool, ProxyEntry } from '../pool/pool.ts';
import { isGateway } from '../pool/types.ts';
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

export class ExitLearner {
  readonly #d: ExitLearnerDeps;
  readonly #changes: Counter;

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
    if (ip === null || this.#d.pool.get(e.record.id) !== e) return;
    const geo = this.#d.geo?.lookup(ip) ?? { country: null, asn: null };
    const old = e.exit;
    if (old !== null && old.ip !== ip) {
      this.#changes.inc();
      this.#d.logger.warn(
        { proxy_id: e.record.id, proxy: e.url, exit_ip_was: old.ip, exit_ip: ip },
        "a static proxy's exit address changed",
      );
    }
    try {
      await this.#d.pool.setExit(e, { ip, seenAt: this.#d.now(), country: geo.country, asn: geo.asn });
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
