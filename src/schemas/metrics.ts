import { Type } from 'typebox';
import { Nullable } from './common.ts';

const BreakerStateEnum = Type.Enum(['closed', 'open', 'half-open']);

export const BreakerStateSchema = Type.Object({
  proxy_id: Type.String(),
  state: BreakerStateEnum,
  failure_count: Type.Integer(),
  failure_threshold: Type.Integer(),
  window_duration: Type.Number({ description: 'seconds' }),
  timeout_duration: Type.Number({ description: 'seconds' }),
  next_test_time: Nullable(Type.String({ format: 'date-time' })),
  last_state_change: Type.String({ format: 'date-time' }),
});

export const BreakerEventSchema = Type.Object({
  proxy_id: Type.String(),
  from_state: BreakerStateEnum,
  to_state: BreakerStateEnum,
  timestamp: Type.String({ format: 'date-time' }),
  failure_count: Type.Integer(),
  reason: Type.String(),
});

export const BreakerMetricsSchema = Type.Object({
  states: Type.Array(BreakerStateSchema),
  events: Type.Array(BreakerEventSchema),
  total_events: Type.Integer(),
  hours: Type.Integer(),
});

export const HoursQuery = Type.Object({
  hours: Type.Integer({ minimum: 1, maximum: 720, default: 24 }),
});

export const FormatHoursQuery = Type.Object({
  hours: Type.Integer({ minimum: 1, maximum: 720, default: 24 }),
  format: Type.Optional(Type.Enum(['json', 'prometheus'])),
});

export const RetrySummarySchema = Type.Object({
  total_retries: Type.Integer(),
  success_by_attempt: Type.Record(Type.String(), Type.Integer()),
  circuit_breaker_events_count: Type.Integer(),
  ban_events_count: Type.Integer({ description: 'Bans (a site refusing a proxy address) within retention' }),
  retention_hours: Type.Integer(),
});

export const RetryHourSchema = Type.Object({
  timestamp: Type.String({ format: 'date-time' }),
  total_requests: Type.Integer(),
  total_retries: Type.Integer(),
  success_rate: Type.Number(),
  avg_latency: Type.Number({ description: 'seconds' }),
});

export const RetryProxySchema = Type.Object({
  proxy_id: Type.String(),
  total_attempts: Type.Integer(),
  success_count: Type.Integer(),
  failure_count: Type.Integer({
    description: "The proxy's own faults; bans and the target's failures are not",
  }),
  avg_latency: Type.Number({ description: 'seconds' }),
  circuit_breaker_opens: Type.Integer(),
  bans: Type.Integer({ description: 'Bans of this proxy by target sites' }),
});

export const RetryMetricsSchema = Type.Object({
  summary: RetrySummarySchema,
  timeseries: Type.Array(RetryHourSchema),
  by_proxy: Type.Record(Type.String(), RetryProxySchema),
});

export const StatsSchema = Type.Object({
  requests_total: Type.Integer(),
  requests_per_second: Type.Number(),
  avg_latency_ms: Type.Number(),
  error_rate: Type.Number({ minimum: 0, maximum: 1 }),
  proxy_stats: Type.Array(
    Type.Object({
      proxy_id: Type.String(),
      requests: Type.Integer(),
      successes: Type.Integer(),
      failures: Type.Integer({
        description: "The proxy's own faults; bans and the target's failures are not",
      }),
      bans: Type.Integer({ description: 'Answers that were bans, counted apart from failures' }),
      avg_latency_ms: Type.Number(),
    }),
  ),
});
