import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { CooldownTable } from '../bans/cooldowns.ts';
import type { BreakerRegistry } from '../breaker/registry.ts';
import { MemoryRateCounter, type RateCounter } from '../lib/rate-counter.ts';
import type { StatsJson } from '../metrics/stats.ts';
import type { ProviderSessions } from '../outbound/gateways.ts';
import type { Pool } from '../pool/pool.ts';
import type { SessionTable } from '../rotation/sessions.ts';
import type { InstanceStats } from './notices.ts';

/**
 * Several instances as one (docs/decisions.md, "Shared state"): the one place that knows whether state is
 * shared. Without ROTA_REDIS_URL everything is local (today's behaviour); with it, rate-limit counters live
 * in Redis, and breakers, sessions, cool-downs, pool and settings changes travel between instances.
 */
export interface SharedStateDeps {
  readonly pool: Pool;
  readonly breakers: BreakerRegistry;
  readonly sessions: SessionTable;
  /** Gateways' provider-session generations (outbound/gateways.ts). */
  readonly providerSessions: ProviderSessions;
  readonly cooldowns: CooldownTable;
  readonly reloadSettings: () => Promise<void>;
  readonly onSettingsChange: (listener: () => void) => void;
  readonly ownTotals: () => InstanceStats;
  readonly registry: Registry;
}

export interface SharedState {
  readonly enabled: boolean;
  readonly counter: RateCounter;
  start(d: SharedStateDeps): Promise<void>;
  /** A ban made here, told to the others. */
  banned(proxyId: string, host: string, until: number, count: number): void;
  /** `GET stats` across the cluster (this instance's own snapshot when not shared). */
  statsView(own: StatsJson, pool: Pool): StatsJson;
  close(): Promise<void>;
}

/** The Redis side (and ioredis) is loaded only when ROTA_REDIS_URL is set. */
export async function createSharedState(redisUrl: string | null, logger: Logger): Promise<SharedState> {
  if (redisUrl === null) return localState();
  const { RedisState } = await import('./redis-state.ts');
  return new RedisState(redisUrl, logger);
}

function localState(): SharedState {
  return {
    enabled: false,
    counter: new MemoryRateCounter(),
    start: async () => {},
    banned: () => {},
    statsView: (own) => own,
    close: async () => {},
  };
}
