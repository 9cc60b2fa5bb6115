import type { Logger } from 'pino';
import { AuditLog } from './audit/audit.ts';
import type { Config } from './config.ts';
import { RuntimeSettings } from './control/settings.ts';
import { ClientIpResolver } from './http/client-ip.ts';
import { Pool } from './pool/pool.ts';
import { openStore } from './store/open.ts';
import type { ProxyStore } from './store/types.ts';

export interface Clock {
  /** Wall clock, epoch ms: timestamps shown to people. */
  now(): number;
  /** Monotonic ms: durations, windows, timeouts. */
  monotonic(): number;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
};

export interface Services {
  readonly config: Config;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly random: () => number;
  readonly store: ProxyStore;
  readonly pool: Pool;
  readonly settings: RuntimeSettings;
  readonly audit: AuditLog;
  readonly clientIp: ClientIpResolver;
  readonly startedAt: number;
  /** True once storage is open and the pool loaded (`/ready`). */
  ready: boolean;
  close(): Promise<void>;
}

export interface ServiceOverrides {
  clock?: Clock;
  random?: () => number;
  store?: ProxyStore;
}

/** The composition root: builds every service from the config. The only place that wires I/O. */
export async function createServices(
  config: Config,
  logger: Logger,
  o: ServiceOverrides = {},
): Promise<Services> {
  const clock = o.clock ?? systemClock;
  const store = o.store ?? openStore(config, logger);
  const pool = new Pool(store, clock.now);
  const settings = new RuntimeSettings(config, store);
  const services: Services = {
    config,
    logger,
    clock,
    random: o.random ?? Math.random,
    store,
    pool,
    settings,
    audit: new AuditLog(logger, config.auditLog),
    clientIp: new ClientIpResolver(config.trustedProxies, config.clientIpHeader),
    startedAt: clock.now(),
    ready: false,
    async close() {
      services.ready = false;
      await store.close();
    },
  };
  await store.open();
  await settings.load();
  await pool.load();
  services.ready = true;
  return services;
}
