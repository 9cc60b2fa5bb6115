import type { Logger } from 'pino';
import type { AuditLog } from './audit/audit.ts';
import type { CooldownTable } from './bans/cooldowns.ts';
import type { BanJudge } from './bans/judge.ts';
import type { BanPolicyHolder } from './bans/policy.ts';
import type { TargetRefusals } from './bans/refusals.ts';
import type { ExitOf } from './bans/report.ts';
import type { BreakerRegistry } from './breaker/registry.ts';
import type { Config } from './config.ts';
import type { RuntimeSettings } from './control/settings.ts';
import type { Listeners } from './forward/listeners.ts';
import type { HealthChecker } from './health/checker.ts';
import type { ClientIpResolver } from './http/client-ip.ts';
import type { Inspection } from './inspect/index.ts';
import type { InspectionSettings } from './inspect/settings.ts';
import type { RateCounter } from './lib/rate-counter.ts';
import type { PromMetrics } from './metrics/prometheus.ts';
import type { RetryMetrics } from './metrics/retry.ts';
import type { CallSeries } from './metrics/series.ts';
import type { StatsAggregator } from './metrics/stats.ts';
import type { Connections } from './net/connections.ts';
import type { Executor } from './outbound/executor.ts';
import type { ProviderSessions } from './outbound/gateways.ts';
import type { CallPrelude } from './outbound/prelude.ts';
import type { RetryPolicyHolder } from './outbound/retry-policy.ts';
import type { Selector } from './outbound/selector.ts';
import type { PolicyHolder } from './policies/holder.ts';
import type { Pool } from './pool/pool.ts';
import type { HostAnalytics } from './requestlog/hosts/hosts.ts';
import type { RequestLog } from './requestlog/log.ts';
import type { SharedState } from './shared-state/shared.ts';
import type { SourceManager } from './sources/manager.ts';
import type { Resolver, SsrfGuard } from './ssrf/guard.ts';
import type { ProxyStore } from './store/types.ts';
import type { DispatcherCache } from './upstream/dispatchers.ts';
import type { UpstreamTlsOptions } from './upstream/types.ts';

/** What the composition root (services.ts) builds: every service, and the overrides tests may give. */

export interface Clock {
  /** Wall clock, epoch ms: timestamps shown to people. */
  now(): number;
  /** Monotonic ms: durations, windows, timeouts. */
  monotonic(): number;
}

export interface Services {
  readonly config: Config;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly random: () => number;
  readonly store: ProxyStore;
  readonly pool: Pool;
  readonly settings: RuntimeSettings;
  readonly retry: RetryPolicyHolder;
  readonly banPolicy: BanPolicyHolder;
  /** Per-site policy rules (policies/). */
  readonly policies: PolicyHolder;
  /** Gateways' provider sessions (outbound/gateways.ts). */
  readonly providerSessions: ProviderSessions;
  /** Ban detection, and bans clients report (POST bans). */
  readonly bans: BanJudge;
  /** Ban cool-downs of (proxy, host) pairs. */
  readonly cooldowns: CooldownTable;
  /** Cool-downs of (proxy, host:port) pairs after the proxy refused that target. */
  readonly refusals: TargetRefusals;
  /** What a reported ban through a gateway is about (bans/report.ts, outbound/gateways.ts). */
  readonly exitOf: ExitOf;
  readonly breakers: BreakerRegistry;
  readonly dispatchers: DispatcherCache;
  readonly selector: Selector;
  readonly executor: Executor;
  /** The one call prelude of every door: SSRF rules, timeout, host and port for bans and refusals. */
  readonly prelude: CallPrelude;
  readonly ssrf: SsrfGuard;
  readonly health: HealthChecker;
  /** Proxy sources: lists fetched on a timer, their new proxies added (sources/). */
  readonly sources: SourceManager;
  readonly stats: StatsAggregator;
  /** Per-second call series and per-proxy figures for the dashboard. */
  readonly series: CallSeries;
  /** Every call's record and trace, this instance's (GET requests; ROTA_REQUEST_LOG_SIZE). */
  readonly requestLog: RequestLog;
  /** Per-site analytics fed by the request log (GET hosts). */
  readonly hosts: HostAnalytics;
  readonly retryMetrics: RetryMetrics;
  readonly prom: PromMetrics;
  readonly audit: AuditLog;
  readonly clientIp: ClientIpResolver;
  /** The forward-proxy listeners (started by main.ts, beside the API). */
  readonly listeners: Listeners;
  /** Caps on client connections, the API and both listeners together (net/connections.ts). */
  readonly connections: Connections;
  /** Rate-limit counts of every door (API and listeners). */
  readonly rateCounter: RateCounter;
  /** Whether and how runtime state is shared with other instances (shared-state/). */
  readonly shared: SharedState;
  /** HTTPS inspection's CA and leaf certificates (inspect/). */
  readonly inspection: Inspection;
  /** Which tunnels HTTPS inspection terminates (`GET`/`PUT inspection`; persisted and shared). */
  readonly inspectionSettings: InspectionSettings;
  readonly startedAt: number;
  /** True once storage is open and the pool loaded (`/ready`). */
  ready: boolean;
  close(): Promise<void>;
}

export interface ServiceOverrides {
  clock?: Clock;
  random?: () => number;
  store?: ProxyStore;
  /** Trust for upstream TLS (tests use self-signed proxies and targets). */
  upstreamTls?: UpstreamTlsOptions;
  /** How long a deleted proxy's in-flight requests may finish (default 5 s); tests shorten it. */
  upstreamCloseGraceMs?: number;
  /** Process metrics on /metrics; tests building many apps turn them off. */
  processMetrics?: boolean;
  /** How the SSRF rules resolve a target's name (tests give names addresses without DNS). */
  resolve?: Resolver;
}
