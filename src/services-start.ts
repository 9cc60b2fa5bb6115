import type { BanPolicyHolder } from './bans/policy.ts';
import type { Config } from './config.ts';
import type { RuntimeSettings } from './control/settings.ts';
import type { HealthChecker } from './health/checker.ts';
import type { InspectionSettings } from './inspect/settings.ts';
import type { PromMetrics } from './metrics/prometheus.ts';
import type { StatsAggregator } from './metrics/stats.ts';
import type { ProviderSessions } from './outbound/gateways.ts';
import type { RetryPolicyHolder } from './outbound/retry-policy.ts';
import type { Selector } from './outbound/selector.ts';
import type { PolicyHolder } from './policies/holder.ts';
import type { Pool } from './pool/pool.ts';
import type { SharedState } from './shared-state/shared.ts';
import type { SourceManager } from './sources/manager.ts';
import type { ProxyStore } from './store/types.ts';

/** What the start sequence touches of the services (services.ts `Services` has all of these). */
export interface Startable {
  readonly config: Config;
  readonly store: ProxyStore;
  readonly settings: RuntimeSettings;
  readonly retry: RetryPolicyHolder;
  readonly banPolicy: BanPolicyHolder;
  readonly inspectionSettings: InspectionSettings;
  readonly policies: PolicyHolder;
  readonly providerSessions: ProviderSessions;
  readonly pool: Pool;
  readonly shared: SharedState;
  readonly selector: Selector;
  readonly breakers: Parameters<SharedState['start']>[0]['breakers'];
  readonly cooldowns: Parameters<SharedState['start']>[0]['cooldowns'];
  readonly prom: PromMetrics;
  readonly stats: StatsAggregator;
  readonly health: HealthChecker;
  readonly sources: SourceManager;
  ready: boolean;
}

/**
 * The start sequence of the composition root (services.ts), once every service is built: storage, the
 * stored settings and policies, the pool, shared state, then the periodic work (health checks, proxy
 * sources). Order matters: the pool is loaded before shared state compares it with the other
 * instances, and nothing periodic runs before the pool is there.
 */
export async function startServices(s: Startable): Promise<void> {
  const { store, settings, retry, banPolicy, pool, shared, selector, prom, stats, sources } = s;
  const inspectionSettings = s.inspectionSettings;
  await store.open();
  await settings.load();
  if (await retry.load()) settings.markStored();
  if (await banPolicy.load()) settings.markStored();
  if (await inspectionSettings.load()) settings.markStored();
  await s.policies.load();
  await pool.load();
  await shared.start({
    pool,
    breakers: s.breakers,
    sessions: selector.sessionTable,
    providerSessions: s.providerSessions,
    cooldowns: s.cooldowns,
    registry: prom.registry,
    ownTotals: () => stats.totals(),
    reloadSettings: async () => {
      await settings.load();
      await retry.load();
      await banPolicy.load();
      await inspectionSettings.load();
      await s.policies.load();
    },
    onSettingsChange: (l) => {
      settings.onChange(l);
      retry.onChange(l);
      banPolicy.onChange(l);
      inspectionSettings.onChange(l);
      s.policies.onChange(l);
    },
  });
  s.health.start(s.config.healthCheckIntervalS);
  await sources.load(); // proxy sources
  sources.start(); // proxy sources
  s.ready = true;
}
