import type { Pool } from './pool.ts';

export interface PoolSummary {
  total: number;
  active: number;
  failing: number;
}

/** docs/decisions.md, "Monitoring": failing = health unhealthy/dead or breaker open. */
export function summarize(pool: Pool): PoolSummary {
  let active = 0;
  let failing = 0;
  for (const e of pool.all()) {
    const status = pool.status(e.record.id);
    if (status === 'active') active++;
    if (status === 'failed' || e.health === 'unhealthy' || e.health === 'dead') failing++;
  }
  return { total: pool.size, active, failing };
}

export type PoolHealth = 'healthy' | 'degraded' | 'unhealthy';

export function poolHealth(s: PoolSummary): PoolHealth {
  if (s.total === 0) return 'degraded';
  if (s.failing === 0) return 'healthy';
  return s.failing === s.total ? 'unhealthy' : 'degraded';
}
