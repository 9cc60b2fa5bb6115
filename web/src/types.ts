/** The shapes of the API answers the dashboard reads (src/http/routes/dashboard-api.ts and others). */

export type BreakerState = 'closed' | 'half-open' | 'open';

export interface Info {
  version: string;
  auth_enabled: boolean;
  strategy: string;
  strategies: string[];
  bulk_import: boolean;
  breaker: { failure_threshold: number; window_s: number; timeout_s: number };
  series_interval_s: number;
  series_window_s: number;
  live_poll_ms: number;
  table_poll_ms: number;
}

export interface Samples {
  interval_s: number;
  t: number[];
  requests: number[];
  errors: number[];
  p50_ms: (number | null)[];
  p95_ms: (number | null)[];
}

export interface BreakerEventView {
  proxy_id: string;
  url: string | null;
  from_state: BreakerState;
  to_state: BreakerState;
  reason: string;
  failure_count: number;
  timestamp: number;
}

export interface BanView {
  proxy_id: string;
  url: string | null;
  host: string;
  until: number;
  count: number;
}

export interface Live {
  now: number;
  strategy: string;
  series: Samples;
  pool: {
    total: number;
    healthy: number;
    unhealthy: number;
    breakers: { closed: number; half_open: number; open: number };
    in_flight: number;
  };
  breaker_events: BreakerEventView[];
  bans: { active: number; recent: BanView[] };
}

export interface Row {
  id: string;
  url: string;
  protocol: string;
  country: string | null;
  health: string;
  breaker: BreakerState;
  requests: number;
  success_rate: number | null;
  p50_ms: number | null;
  in_flight: number;
}

export interface TablePage {
  items: Row[];
  total: number;
  pool_size: number;
  page: number;
  page_size: number;
  has_next: boolean;
}

export interface ImportSummary {
  created: number;
  duplicates: number;
  invalid: { line: number; reason: string }[];
  invalid_count: number;
}

export interface ProxyCreated {
  id: string;
  url: string;
}
