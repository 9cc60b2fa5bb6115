/**
 * The answers of the dashboard's endpoints under /api/v1/dashboard (http/routes/dashboard-api.ts). The
 * dashboard (web/src/types.ts) takes its types from here with `import type`, so this module and what it
 * imports must stay free of Node's modules and types: web/ is type-checked without them.
 */
import { type Static, Type } from 'typebox';
import { BREAKER_STATES } from '../breaker/types.ts';
import { HEALTH_VALUES, PROTOCOLS } from '../pool/types.ts';
import { STRATEGIES } from '../rotation/names.ts';
import { Nullable } from './common.ts';

export const InfoSchema = Type.Object({
  version: Type.String(),
  auth_enabled: Type.Boolean(),
  strategy: Type.Enum([...STRATEGIES]),
  strategies: Type.Array(Type.Enum([...STRATEGIES])),
  bulk_import: Type.Boolean({ description: 'POST proxies/import (text/plain, one URL a line) exists' }),
  breaker: Type.Object({
    failure_threshold: Type.Integer(),
    window_s: Type.Number(),
    timeout_s: Type.Number(),
  }),
  series_interval_s: Type.Integer(),
  series_window_s: Type.Integer(),
  live_poll_ms: Type.Integer(),
  table_poll_ms: Type.Integer(),
});

const NullableNumbers = Type.Array(Nullable(Type.Number()));
export const SamplesSchema = Type.Object({
  interval_s: Type.Integer(),
  t: Type.Array(Type.Integer(), { description: 'Epoch s of each finished second' }),
  requests: Type.Array(Type.Integer()),
  errors: Type.Array(Type.Integer()),
  p50_ms: NullableNumbers,
  p95_ms: NullableNumbers,
});

export const BreakerEventViewSchema = Type.Object({
  proxy_id: Type.String(),
  url: Nullable(Type.String()),
  from_state: Type.Enum([...BREAKER_STATES]),
  to_state: Type.Enum([...BREAKER_STATES]),
  reason: Type.String(),
  failure_count: Type.Integer(),
  timestamp: Type.Integer({ description: 'Epoch ms' }),
});

export const BanViewSchema = Type.Object({
  proxy_id: Type.String(),
  url: Nullable(Type.String()),
  host: Type.String(),
  since: Type.Integer({ description: "Epoch ms: when the ban began (the server's clock)" }),
  until: Type.Integer({ description: 'Epoch ms: when the cool-down ends' }),
  count: Type.Integer(),
});

export const LiveSchema = Type.Object({
  now: Type.Integer({ description: 'Epoch ms' }),
  strategy: Type.Enum([...STRATEGIES]),
  series: SamplesSchema,
  pool: Type.Object({
    total: Type.Integer(),
    healthy: Type.Integer(),
    unhealthy: Type.Integer({ description: 'health degraded, unhealthy or dead' }),
    checked: Type.Integer({ description: 'health known (checked or used): healthy shares are of these' }),
    breakers: Type.Object({ closed: Type.Integer(), half_open: Type.Integer(), open: Type.Integer() }),
    in_flight: Type.Integer(),
  }),
  breaker_events: Type.Array(BreakerEventViewSchema),
  bans: Type.Object({
    active: Type.Integer(),
    recent: Type.Array(BanViewSchema, {
      description: 'The most recently banned pairs still cooling down, newest last',
    }),
  }),
});

export const RowSchema = Type.Object({
  id: Type.String(),
  url: Type.String({ description: 'scheme://host:port; credentials are never shown' }),
  label: Nullable(Type.String({ description: 'As GET proxies/{id} display_label; never a password' })),
  protocol: Type.Enum([...PROTOCOLS]),
  country: Nullable(Type.String({ description: 'Declared, else the exit country (ROTA_GEOIP_DB)' })),
  health: Type.Enum([...HEALTH_VALUES]),
  breaker: Type.Enum([...BREAKER_STATES]),
  requests: Type.Integer({ description: 'As GET proxies/{id} stats.total_requests' }),
  success_rate: Nullable(
    Type.Number({ description: 'successful / (successful + failed) requests, as GET proxies counts them' }),
  ),
  p50_ms: Nullable(Type.Number({ description: 'Median latency of its last 16 successful attempts' })),
  in_flight: Type.Integer(),
});

export const ProxiesPageSchema = Type.Object({
  items: Type.Array(RowSchema),
  total: Type.Integer(),
  pool_size: Type.Integer(),
  page: Type.Integer(),
  page_size: Type.Integer(),
  has_next: Type.Boolean(),
});

export type Info = Static<typeof InfoSchema>;
export type Samples = Static<typeof SamplesSchema>;
export type BreakerEventView = Static<typeof BreakerEventViewSchema>;
export type BanView = Static<typeof BanViewSchema>;
export type Live = Static<typeof LiveSchema>;
export type Row = Static<typeof RowSchema>;
export type ProxiesPage = Static<typeof ProxiesPageSchema>;
