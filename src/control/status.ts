import type { RetryPolicyHolder } from '../outbound/retry-policy.ts';
import type { Pool } from '../pool/pool.ts';
import { healthyPercentage, summarize } from '../pool/summary.ts';
import type { StorageBackend } from '../store/types.ts';
import type { ConfigSource, RuntimeSettings } from './settings.ts';

/** `GET status`'s data, the same for the API (http/routes/monitoring.ts) and MCP's pool_status. */
export function poolStatus(d: {
  readonly pool: Pool;
  readonly settings: RuntimeSettings;
  readonly backend: StorageBackend;
  readonly lastRotation: number | null;
}): {
  pool_stats: {
    total: number;
    active: number;
    failed: number;
    healthy_percentage: number;
    checked: number;
    last_rotation: string | null;
  };
  rotation_strategy: string;
  storage_backend: StorageBackend;
  config_source: ConfigSource;
} {
  const s = summarize(d.pool);
  const last = d.lastRotation;
  return {
    pool_stats: {
      total: s.total,
      active: s.active,
      failed: s.failing,
      healthy_percentage: healthyPercentage(s),
      checked: s.checked,
      last_rotation: last === null ? null : new Date(last).toISOString(),
    },
    rotation_strategy: d.settings.get().rotation_strategy,
    storage_backend: d.backend,
    config_source: d.settings.source,
  };
}

/** `GET config`'s data, the same for the API (http/routes/config.ts) and MCP's config resource. */
export function configView(d: {
  readonly settings: RuntimeSettings;
  readonly retry: RetryPolicyHolder;
  readonly requireAuth: boolean;
}) {
  const s = d.settings.get();
  return {
    rotation_strategy: s.rotation_strategy,
    timeout: s.timeout,
    max_retries: d.retry.get().max_attempts,
    rate_limits: { ...s.rate_limits },
    auth_enabled: d.requireAuth,
    cors_origins: [...s.cors_origins],
  };
}
