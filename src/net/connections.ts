import ipaddr from 'ipaddr.js';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Config } from '../config.ts';
import { defaultMaxConnections, type FdLimit, readFdLimit } from '../lib/fd-limit.ts';
import { ConnectionCaps, type Door } from './connection-caps.ts';
import { ConnectionGuard, type GuardEvent } from './connection-guard.ts';

/**
 * The process's connection guard as services.ts builds it: the caps from the config (ROTA_MAX_CONNECTIONS
 * defaulting to half the open-file limit), ROTA_TRUSTED_PROXIES counted against the total only, refusals
 * and accept errors logged (at most one line of each kind per 10 s), and the counts on /metrics.
 */

const DOORS: readonly Door[] = ['api', 'http', 'socks5'];

/** A peer address in one of the CIDRs. */
function inRanges(cidrs: readonly string[]): ((address: string) => boolean) | undefined {
  if (cidrs.length === 0) return undefined;
  const ranges = cidrs.map((c) => ipaddr.parseCIDR(c));
  return (address) => {
    if (!ipaddr.isValid(address)) return false;
    const a = ipaddr.process(address);
    return ranges.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits));
  };
}

function describe(e: GuardEvent): [Record<string, unknown>, string] {
  if (e.type === 'refused') {
    return [
      { door: e.door, reason: e.reason, client_ip: e.address, refused_since_last: e.suppressed },
      'connection refused: too many connections',
    ];
  }
  return [{ code: e.code, since_last: e.suppressed }, 'accepting a connection failed'];
}

function registerMetrics(registry: Registry, caps: ConnectionCaps): void {
  const registers = [registry];
  new Gauge({
    name: 'rota_client_connections',
    help: 'Client connections open now, by door (api, http listener, socks5 listener)',
    labelNames: ['door'],
    registers,
    collect(this: Gauge<'door'>) {
      for (const d of DOORS) this.set({ door: d }, caps.open(d));
    },
  });
  new Counter({
    name: 'rota_client_connections_refused_total',
    help: 'Client connections refused by ROTA_MAX_CONNECTIONS_PER_IP (per_ip) or ROTA_MAX_CONNECTIONS (total)',
    labelNames: ['door', 'reason'],
    registers,
    collect(this: Counter<'door' | 'reason'>) {
      this.reset();
      for (const [key, n] of caps.refused) {
        const [door = '', reason = ''] = key.split(' ');
        this.inc({ door, reason }, n);
      }
    },
  });
}

export interface ConnectionLimits {
  readonly fd: FdLimit | null;
  readonly maxConnections: number;
  readonly maxConnectionsPerIp: number;
  readonly apiReserve: number;
}

export interface Connections {
  readonly guard: ConnectionGuard;
  readonly limits: ConnectionLimits;
}

export function createConnections(
  config: Config,
  logger: Logger,
  registry: Registry,
  fd: FdLimit | null = readFdLimit(),
): Connections {
  const exempt = inRanges(config.trustedProxies);
  const caps = new ConnectionCaps({
    maxPerIp: config.maxConnectionsPerIp,
    maxTotal: config.maxConnections ?? defaultMaxConnections(fd),
    ...(exempt ? { exempt } : {}),
  });
  registerMetrics(registry, caps);
  const guard = new ConnectionGuard(caps, (e) => logger.warn(...describe(e)));
  const limits = {
    fd,
    maxConnections: caps.maxTotal,
    maxConnectionsPerIp: caps.maxPerIp,
    apiReserve: caps.apiReserve,
  };
  return { guard, limits };
}

/**
 * One start-up line with the open-file limit and the caps; a warning when the soft limit is below the
 * hard one (Node raises it at start on Linux and macOS) or the total cap leaves too few descriptors for
 * the upstream sockets.
 */
export function logConnectionLimits(logger: Logger, l: ConnectionLimits): void {
  const fields = {
    open_files_soft: l.fd?.soft ?? null,
    open_files_hard: l.fd?.hard ?? null,
    max_connections: l.maxConnections,
    max_connections_per_ip: l.maxConnectionsPerIp,
    api_reserve: l.apiReserve,
  };
  logger.info(fields, 'connection limits');
  if (l.fd !== null && l.fd.soft < l.fd.hard) {
    logger.warn(fields, 'the soft open-file limit is below the hard one');
  }
  if (l.fd !== null && l.maxConnections > Math.floor(l.fd.soft / 2)) {
    logger.warn(
      fields,
      'ROTA_MAX_CONNECTIONS leaves fewer descriptors than client connections for upstream sockets',
    );
  }
}
