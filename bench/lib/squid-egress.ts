import { launchSquid, type Squid } from './squid.ts';

/** One squid port and the loopback address its outgoing connections leave from. */
export interface EgressProxy {
  readonly port: number;
  readonly egress: string;
}

export interface EgressSquid extends Squid {
  readonly proxies: readonly EgressProxy[];
}

/**
 * squid as bench/lib/squid.ts runs it (no cache, no log, persistent connections both ways), but each
 * `http_port` leaves from an address of its own (`tcp_outgoing_address` by port name), so that a site
 * can tell the proxies apart as it would tell real exit addresses apart. squid keys its idle server
 * connections by local address too, so a connection from one egress is never reused for another.
 */
function listenLines(proxies: readonly EgressProxy[]): string[] {
  return [
    ...proxies.map((p, i) => `http_port 127.0.0.1:${p.port} name=p${i}`),
    ...proxies.map((_, i) => `acl p${i} myportname p${i}`),
    ...proxies.map((p, i) => `tcp_outgoing_address ${p.egress} p${i}`),
  ];
}

/** A second squid (its own folder and pid file) whose port i leaves from `egress[i]`. */
export async function startEgressSquid(workDir: string, egress: readonly string[]): Promise<EgressSquid> {
  let proxies: EgressProxy[] = [];
  const squid = await launchSquid(workDir, 'squid-egress', egress.length, (ports) => {
    proxies = ports.map((port, i) => ({ port, egress: egress[i] ?? '' }));
    return listenLines(proxies);
  });
  return { ...squid, proxies };
}
