import ipaddr from 'ipaddr.js';
import type { Logger } from 'pino';
import { AuditLog } from './audit/audit.ts';
import { CooldownTable, keyParts } from './bans/cooldowns.ts';
import { BanJudge } from './bans/judge.ts';
import { BanPolicyHolder } from './bans/policy.ts';
import { DEFAULT_REFUSAL_TERMS, TargetRefusals } from './bans/refusals.ts';
import { BreakerRegistry } from './breaker/registry.ts';
import type { BreakerStateName } from './breaker/types.ts';
import type { Config } from './config.ts';
import { RuntimeSettings } from './control/settings.ts';
import { createExitLearner, exitSharers } from './exit/index.ts';
import { Listeners } from './forward/listeners.ts';
import { HealthChecker } from './health/checker.ts';
import { ClientIpResolver } from './http/client-ip.ts';
import { createInspection } from './inspect/index.ts';
import { InspectionSettings } from './inspect/settings.ts';
import { createConnections } from './net/connections.ts';
import { Executor } from './outbound/executor.ts';
import { ProviderSessions, reportedExit } from './outbound/gateways.ts';
import { CallPrelude } from './outbound/prelude.ts';
import { RetryPolicyHolder } from './outbound/retry-policy.ts';
import { Selector } from './outbound/selector.ts';
import { createPolicies, ruleInspects } from './policies/index.ts';
import { PolicyMetrics } from './policies/metrics.ts';
import { Pool, type ProxyEntry } from './pool/pool.ts';
import type { ProxyStatus } from './pool/types.ts';
import { isGateway } from './pool/types.ts';
import { buildMetrics } from './services-metrics.ts';
import { startServices } from './services-start.ts';
import type { Clock, ServiceOverrides, Services } from './services-types.ts';
import { createSharedState } from './shared-state/shared.ts';
import { createSourceManager } from './sources/manager.ts'; // proxy sources
import { AllowList } from './ssrf/allow.ts';
import { SsrfGuard } from './ssrf/guard.ts';
import { MemoryStore } from './store/memory.ts';
import { openStore } from './store/open.ts';
import { DispatcherCache } from './upstream/dispatchers.ts';

export type { Clock, ServiceOverrides, Services } from './services-types.ts';

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
};

const STATUS_OF: Record<BreakerStateName, ProxyStatus> = {
  closed: 'active',
  'half-open': 'degraded',
  open: 'failed',
};

/** ROTA_UPSTREAM_ALLOW as a predicate: an IP literal by its ranges, a name by the names listed. */
function allowedHosts(list: readonly string[]): (host: string) => boolean {
  const allow = new AllowList(list);
  return (host) => {
    const bare = host.replace(/^\[|\]$/g, '');
    return ipaddr.isValid(bare) ? allow.hasAddress(ipaddr.process(bare)) : allow.hasHost(bare);
  };
}

/** The composition root: builds every service from the config. The only place that wires I/O. */
export async function createServices(
  config: Config,
  logger: Logger,
  o: ServiceOverrides = {},
): Promise<Services> {
  const clock = o.clock ?? systemClock;
  const random = o.random ?? Math.random;
  const store = o.store ?? (await openStore(config, logger));
  const pool = new Pool(store, clock.now);
  const settings = new RuntimeSettings(config, store);
  const retry = new RetryPolicyHolder(store, config.maxRetries);
  const breakers = new BreakerRegistry({
    settings: config.breaker,
    now: clock.now,
    retentionMs: config.metricsRetentionHours * 3_600_000,
  });
  pool.setStatusResolver((id) => STATUS_OF[breakers.state(id)]);
  const ssrf = new SsrfGuard({ allow: config.ssrfAllow, ...(o.resolve ? { resolve: o.resolve } : {}) });
  const dispatchers = new DispatcherCache({
    checkAddress: (ip) => ssrf.checkAddress(ip),
    ...(config.upstreamAllow.length > 0 ? { proxyAllowed: allowedHosts(config.upstreamAllow) } : {}),
    connectTimeoutMs: config.connectTimeoutS * 1000,
    ...(o.upstreamTls ? { tls: o.upstreamTls } : {}),
    ...(o.upstreamCloseGraceMs === undefined ? {} : { closeGraceMs: o.upstreamCloseGraceMs }),
  });
  const cooldowns = new CooldownTable({ now: clock.now });
  const banPolicy = new BanPolicyHolder(store, config);
  const policies = createPolicies(config.sessions, store);
  const inspectionSettings = new InspectionSettings(store, config, (host) =>
    ruleInspects(policies.holder, host),
  );
  // A proxy's refusals of one target cool the pair down; many of them call for a health check (the
  // operator's URL) before the proxy itself is judged. `health` is made below; asked only during calls.
  const refusals = new TargetRefusals(new CooldownTable({ now: clock.now }), {
    terms: { ...DEFAULT_REFUSAL_TERMS, maxCooldownS: config.bans.maxCooldownS },
    confirm: (id) => {
      logger.warn({ proxy_id: id }, 'proxy refused many targets: health-checking it');
      health.check([id]).catch((err: unknown) => logger.error({ err }, 'health check after refusals failed'));
    },
  });
  const selector = new Selector(pool, breakers, settings, {
    random,
    now: clock.now,
    cooldowns,
    refusals: refusals.table,
    maxInFlight: config.proxyMaxInFlight,
    sessionDefaults: policies.sessions.terms,
  });
  const { stats, retryMetrics, prom, series, requestLog, hosts, onCall, onCallEnd, onLateAttempt } =
    buildMetrics({
      logger,
      config,
      clock,
      pool,
      breakers,
      cooldowns,
      processMetrics: o.processMetrics ?? true,
    });
  const shared = await createSharedState(config.redisUrl, logger);
  const policyMetrics = new PolicyMetrics(prom.registry);
  const bans = new BanJudge(
    banPolicy,
    cooldowns,
    (e) => {
      if (e.rule !== undefined) policyMetrics.ban(e.rule);
      prom.recordBan(e.status);
      retryMetrics.recordBan(keyParts(e.proxyId).entryId);
      if (e.transient !== true) shared.banned(e.proxyId, e.host, e.until, e.count);
    },
    // A ban of one proxy bans every proxy last seen exiting from its address (exit/).
    (id) => exitSharers(pool, id),
  );
  const providerSessions = new ProviderSessions();
  // A session pinned anew or ended leaves its provider session too: the same gateway gives a new exit. Not
  // for a fault: a gateway's faults are counted on its entry, so one provider session's would move every
  // session pinned to it; the executor moves the session whose attempt failed (executor.ts).
  selector.sessionTable.onRelease = (key, had, why) => {
    if (why !== 'fault' && isGateway(had.record)) providerSessions.bump(key, had.record.id);
  };
  const executor = new Executor({
    selector,
    breakers,
    retry,
    onCall,
    onCallEnd,
    onLateAttempt,
    onError: (err) => logger.error({ err }, 'late attempt bookkeeping failed'),
    random,
    monotonic: clock.monotonic,
    now: clock.now,
    connectTimeoutMs: config.connectTimeoutS * 1000,
    hedgeDelayMs: config.hedgeDelayS * 1000,
    bans,
    refusals,
    providerSessions,
    onPaceRefused: (rule) => policyMetrics.rateLimited(rule),
  });
  const prelude = new CallPrelude({
    ssrf,
    settings,
    selector,
    policies: () => policies.holder.book(),
    pacer: policies.pacer,
    sessions: policies.sessions,
    monotonic: clock.monotonic,
    retryTimeoutS: () => retry.get().timeout ?? null,
    onRule: (rule, event) =>
      event === 'request' ? policyMetrics.request(rule) : policyMetrics.rateLimited(rule),
  });
  policies.holder.onRules((names) => {
    policyMetrics.keep(names);
    const named = policies.holder.get().rules.flatMap((r) => (r.strategy === undefined ? [] : [r.strategy]));
    selector.useRuleStrategies(new Set(named));
  });
  const health = new HealthChecker({
    pool,
    breakers,
    selector,
    dispatchers,
    url: config.healthCheckUrl,
    concurrency: config.healthCheckConcurrency,
    timeoutMs: Math.min(config.timeoutS, 10) * 1000,
    monotonic: clock.monotonic,
    now: clock.now,
    // ROTA_EXIT_IP_URL: exit addresses learned after each passed check (exit/).
    exits: createExitLearner(config, {
      pool,
      dispatchers,
      logger,
      registry: prom.registry,
      now: clock.now,
      monotonic: clock.monotonic,
    }),
  });
  pool.listen({
    added: (e: ProxyEntry) => {
      // No breaker yet: the registry creates one on first admission (100,000 at start-up cost 0.4 s).
      selector.added(e);
    },
    removed: (e: ProxyEntry) => {
      const id = e.record.id;
      selector.removed(e);
      breakers.remove(id);
      cooldowns.removeProxy(id);
      refusals.removeProxy(id);
      void dispatchers.close(id);
      stats.removeProxy(id);
      retryMetrics.removeProxy(id);
      prom.removeProxy(id);
    },
  });
  const sources = createSourceManager(config, logger, { store, pool, health, ssrf, now: clock.now }); // proxy sources
  const rateCounter = shared.counter;
  const audit = new AuditLog(logger, config.auditLog);
  const connections = createConnections(config, logger, prom.registry);
  // The CA is kept in the store only when the store outlives the process (inspect/authority.ts).
  const inspection = createInspection(config, store instanceof MemoryStore ? null : store, logger);
  const listeners = new Listeners({
    config,
    logger,
    registry: prom.registry,
    rateCounter,
    audit,
    executor,
    prelude,
    dispatchers,
    connections: connections.guard,
    inspection: { leaves: inspection.leaves, settings: inspectionSettings },
  });
  const services: Services = {
    config,
    logger,
    clock,
    random,
    store,
    pool,
    settings,
    retry,
    banPolicy,
    policies: policies.holder,
    providerSessions,
    bans,
    cooldowns,
    refusals,
    exitOf: reportedExit({ pool, prelude, sessions: providerSessions }),
    breakers,
    dispatchers,
    selector,
    executor,
    prelude,
    ssrf,
    health,
    sources, // proxy sources
    stats,
    series, // dashboard
    requestLog,
    hosts,
    retryMetrics,
    prom,
    audit,
    listeners,
    connections,
    clientIp: new ClientIpResolver(config.trustedProxies, config.clientIpHeader),
    rateCounter,
    shared,
    inspection,
    inspectionSettings,
    startedAt: clock.now(),
    ready: false,
    async close() {
      services.ready = false;
      await sources.stop(); // proxy sources
      await health.stop();
      await listeners.close();
      await shared.close();
      await dispatchers.closeAll();
      await store.close();
    },
  };
  await startServices(services);
  return services;
}
