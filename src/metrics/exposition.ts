import type { BreakerStateName } from '../breaker/types.ts';
import type { RetryMetricsJson } from './retry.ts';

/**
 * Prometheus text format 0.0.4 for the JSON-first endpoints (/metrics/retry and /metrics/circuit-breaker
 * with `format=prometheus`). These are snapshots of windowed data, so every family is a gauge: a windowed
 * count goes down when old hours leave the window, which a counter must never do.
 */

export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Breaker state as a metric value: closed 0, open 1, half-open 2 (docs/decisions.md). */
export const BREAKER_STATE_VALUE: Readonly<Record<BreakerStateName, number>> = {
  closed: 0,
  open: 1,
  'half-open': 2,
};

export type Labels = Readonly<Record<string, string>>;

export interface Sample {
  readonly labels?: Labels;
  readonly value: number;
}

export interface Family {
  readonly name: string;
  readonly help: string;
  readonly type: 'gauge' | 'counter';
  readonly samples: readonly Sample[];
}

export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(v);
}

function formatLabels(labels: Labels | undefined): string {
  if (!labels) return '';
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabelValue(v)}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

export function renderFamilies(families: readonly Family[]): string {
  const lines: string[] = [];
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) lines.push(`${f.name}${formatLabels(s.labels)} ${formatValue(s.value)}`);
  }
  return `${lines.join('\n')}\n`;
}

function gauge(name: string, help: string, samples: readonly Sample[]): Family {
  return { name, help, type: 'gauge', samples };
}

/** GET /metrics/retry?format=prometheus: the same data as the JSON form, for the same `hours`. */
export function renderRetryMetrics(data: RetryMetricsJson, hours: number): string {
  const s = data.summary;
  const hourly = data.timeseries.map((h) => ({ labels: { hour: h.timestamp }, h }));
  const proxies = Object.values(data.by_proxy).map((p) => ({ labels: { proxy_id: p.proxy_id }, p }));
  return renderFamilies([
    gauge('rota_retry_retention_seconds', 'How long retry statistics are kept (whole hours)', [
      { value: s.retention_hours * 3600 },
    ]),
    gauge(
      'rota_retry_window_seconds',
      'Span covered by the hourly and per-proxy series below (whole hours)',
      [{ value: hours * 3600 }],
    ),
    gauge('rota_retry_retries', 'Attempts after the first one, within the retention window', [
      { value: s.total_retries },
    ]),
    gauge(
      'rota_retry_successful_calls',
      'Calls that succeeded, by the attempt they succeeded on, within the retention window',
      Object.entries(s.success_by_attempt).map(([attempt, value]) => ({ labels: { attempt }, value })),
    ),
    gauge('rota_retry_circuit_breaker_events', 'Circuit breaker state changes currently kept', [
      { value: s.circuit_breaker_events_count },
    ]),
    gauge(
      'rota_retry_hour_requests',
      'Proxied calls started in the hour',
      hourly.map(({ labels, h }) => ({ labels, value: h.total_requests })),
    ),
    gauge(
      'rota_retry_hour_retries',
      'Retries in the hour',
      hourly.map(({ labels, h }) => ({ labels, value: h.total_retries })),
    ),
    gauge(
      'rota_retry_hour_success_ratio',
      'Fraction of calls in the hour that succeeded',
      hourly.map(({ labels, h }) => ({ labels, value: h.success_rate })),
    ),
    gauge(
      'rota_retry_hour_latency_seconds',
      'Mean call latency in the hour, retries included',
      hourly.map(({ labels, h }) => ({ labels, value: h.avg_latency })),
    ),
    ...proxyRetryFamilies(proxies),
  ]);
}

function proxyRetryFamilies(
  proxies: { labels: Labels; p: RetryMetricsJson['by_proxy'][string] }[],
): Family[] {
  return [
    gauge(
      'rota_retry_proxy_attempts',
      'Attempts sent through the proxy in the window',
      proxies.map(({ labels, p }) => ({ labels, value: p.total_attempts })),
    ),
    gauge(
      'rota_retry_proxy_successes',
      'Successful attempts through the proxy in the window',
      proxies.map(({ labels, p }) => ({ labels, value: p.success_count })),
    ),
    gauge(
      'rota_retry_proxy_failures',
      'Failed attempts through the proxy in the window',
      proxies.map(({ labels, p }) => ({ labels, value: p.failure_count })),
    ),
    gauge(
      'rota_retry_proxy_latency_seconds',
      'Mean attempt latency through the proxy in the window',
      proxies.map(({ labels, p }) => ({ labels, value: p.avg_latency })),
    ),
    gauge(
      'rota_retry_proxy_circuit_breaker_opens',
      'Times the proxy circuit breaker opened in the window',
      proxies.map(({ labels, p }) => ({ labels, value: p.circuit_breaker_opens })),
    ),
  ];
}

/** A timestamp as JSON shows it (ISO string) or as the breaker keeps it (epoch ms). */
export type TimeValue = string | number;

/** A breaker's state record, as far as the text form needs it. */
export interface BreakerStateInput {
  readonly proxy_id: string;
  readonly state: BreakerStateName;
  readonly failure_count: number;
  readonly failure_threshold: number;
  readonly window_duration: number;
  readonly timeout_duration: number;
  readonly next_test_time: TimeValue | null;
  readonly last_state_change: TimeValue;
}

/** A breaker event, as far as the text form needs it. */
export interface BreakerEventInput {
  readonly proxy_id: string;
  readonly from_state: BreakerStateName;
  readonly to_state: BreakerStateName;
}

/** Circuit breaker metrics (`data` of GET /metrics/circuit-breaker). */
export interface BreakerMetricsInput {
  readonly states: readonly BreakerStateInput[];
  readonly events: readonly BreakerEventInput[];
  readonly total_events: number;
  readonly hours: number;
}

function epochSeconds(t: TimeValue | null): number | null {
  if (t === null) return null;
  const ms = typeof t === 'number' ? t : Date.parse(t);
  return Number.isFinite(ms) ? ms / 1000 : null;
}

/** GET /metrics/circuit-breaker?format=prometheus. */
export function renderBreakerMetrics(data: BreakerMetricsInput): string {
  const per = (pick: (b: BreakerStateInput) => number | null): Sample[] => {
    const out: Sample[] = [];
    for (const b of data.states) {
      const value = pick(b);
      if (value !== null) out.push({ labels: { proxy_id: b.proxy_id }, value });
    }
    return out;
  };
  return renderFamilies([
    gauge(
      'rota_circuit_breaker_state',
      'Circuit breaker state (0 closed, 1 open, 2 half-open)',
      per((b) => BREAKER_STATE_VALUE[b.state]),
    ),
    gauge(
      'rota_circuit_breaker_failures',
      'Proxy failures counted in the current window',
      per((b) => b.failure_count),
    ),
    gauge(
      'rota_circuit_breaker_failure_threshold',
      'Failures within the window that open the breaker',
      per((b) => b.failure_threshold),
    ),
    gauge(
      'rota_circuit_breaker_failure_window_seconds',
      'Window in which failures are counted',
      per((b) => b.window_duration),
    ),
    gauge(
      'rota_circuit_breaker_open_timeout_seconds',
      'Time an open breaker waits before half-open',
      per((b) => b.timeout_duration),
    ),
    gauge(
      'rota_circuit_breaker_next_test_timestamp_seconds',
      'When an open breaker lets a trial request through (absent when not open)',
      per((b) => epochSeconds(b.next_test_time)),
    ),
    gauge(
      'rota_circuit_breaker_last_state_change_timestamp_seconds',
      'Time of the last state change',
      per((b) => epochSeconds(b.last_state_change)),
    ),
    gauge(
      'rota_circuit_breaker_events_window_seconds',
      'Span covered by the event series below (whole hours)',
      [{ value: data.hours * 3600 }],
    ),
    gauge('rota_circuit_breaker_events', 'State changes in the window', [{ value: data.total_events }]),
    gauge(
      'rota_circuit_breaker_transitions',
      'State changes in the window by proxy (current members) and transition',
      transitions(data),
    ),
  ]);
}

function transitions(data: BreakerMetricsInput): Sample[] {
  const counts = new Map<string, { labels: Labels; value: number }>();
  for (const e of data.events) {
    const key = `${e.proxy_id}\u0000${e.from_state}\u0000${e.to_state}`;
    const c = counts.get(key);
    if (c) c.value++;
    else
      counts.set(key, {
        labels: { proxy_id: e.proxy_id, from_state: e.from_state, to_state: e.to_state },
        value: 1,
      });
  }
  return [...counts.values()];
}
