import type { CooldownTable } from './bans/cooldowns.ts';
import type { BreakerRegistry } from './breaker/registry.ts';
import type { Config } from './config.ts';
import type { AttemptRecord, CallRecord } from './metrics/calls.ts';
import { PromMetrics } from './metrics/prometheus.ts';
import { RetryMetrics } from './metrics/retry.ts';
import { CallSeries } from './metrics/series.ts'; // dashboard
import { StatsAggregator } from './metrics/stats.ts';
import type { Pool } from './pool/pool.ts';
import { HostAnalytics } from './requestlog/hosts/hosts.ts';
import { RequestLog } from './requestlog/log.ts';
import { recordView } from './requestlog/view.ts';

/**
 * The numbers side of the composition root (services.ts): per-proxy stats, the retry and breaker
 * metrics, Prometheus, the dashboard's series, and the two hooks the executor reports every call and
 * every late attempt to. One call is told to each of them, in this order, by `onCall`.
 */
export interface MetricsParts {
  readonly stats: StatsAggregator;
  readonly retryMetrics: RetryMetrics;
  readonly prom: PromMetrics;
  readonly series: CallSeries;
  /** Every call's record and trace (GET requests), and per-host analytics fed by it (GET hosts). */
  readonly requestLog: RequestLog;
  readonly hosts: HostAnalytics;
  readonly onCall: (call: CallRecord) => void;
  readonly onCallEnd: (callId: number, up: number, down: number) => void;
  readonly onLateAttempt: (a: AttemptRecord) => void;
}

export interface MetricsDeps {
  readonly config: Config;
  readonly clock: { readonly now: () => number; readonly monotonic: () => number };
  readonly pool: Pool;
  readonly breakers: BreakerRegistry;
  readonly cooldowns: CooldownTable;
  readonly processMetrics: boolean;
  /** Where ROTA_ACCESS_LOG writes its lines. */
  readonly logger?: { info(obj: object, msg: string): void } | undefined;
}

export function buildMetrics(d: MetricsDeps): MetricsParts {
  const { config, clock, pool, breakers, cooldowns } = d;
  const proxyExists = (id: string) => pool.get(id) !== undefined;
  const retentionMs = config.metricsRetentionHours * 3_600_000;
  const stats = new StatsAggregator({ now: clock.monotonic, proxyExists });
  const retryMetrics = new RetryMetrics({
    now: clock.now,
    retentionHours: config.metricsRetentionHours,
    breakerEventsCount: () => breakers.events(clock.now() - retentionMs).length,
    proxyExists,
  });
  const prom = new PromMetrics({
    poolCounts: () => {
      let healthy = 0;
      for (const e of pool.all()) if (e.health === 'healthy') healthy++;
      return { total: pool.size, healthy };
    },
    breakerStates: () =>
      pool.all().map((e) => ({ proxyId: e.record.id, state: breakers.state(e.record.id) })),
    proxyExists,
    cooldownsActive: () => cooldowns.activeCount(),
    defaultMetrics: d.processMetrics,
  });
  const series = new CallSeries({ now: clock.now, pool }); // dashboard
  const hosts = new HostAnalytics({ now: clock.now });
  const requestLog = new RequestLog({ size: config.requestLogSize, now: clock.now, hosts });
  const logger = d.logger;
  if (config.accessLog && logger) {
    const labelOf = (id: string) => pool.get(id)?.url ?? null;
    requestLog.subscribe((e) => logger.info({ call: recordView(e, labelOf) }, 'call'));
  }
  breakers.onTransition((e) => {
    if (e.to_state === 'open') retryMetrics.recordBreakerOpen(e.proxy_id);
  });
  return {
    stats,
    retryMetrics,
    prom,
    series,
    requestLog,
    hosts,
    onCall: (call) => {
      stats.recordCall(call);
      series.recordCall(call); // dashboard
      retryMetrics.recordCall(call);
      prom.recordCall(call);
      requestLog.onCall(call);
    },
    onCallEnd: (id, up, down) => requestLog.ended(id, up, down),
    onLateAttempt: (a) => {
      stats.recordAttempt(a);
      retryMetrics.recordAttempt(a);
      prom.recordAttempt(a);
    },
  };
}
