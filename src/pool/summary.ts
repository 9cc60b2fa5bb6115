import type { Pool } from './pool.ts';

export interface PoolSummary {
  total: number;
  active: number;
  failing: number;
  /** Proxies whose health is known (health-checked or used); the others have never been tried. */
  checked: number;
  /** Checked proxies whose health is `healthy` and that are not failing. */
  checkedHealthy: number;
}

/** docs/decisions.md, "Monitoring": failing = health unhealthy/dead or breaker open. */
export function summarize(pool: Pool): PoolSummary {
  let active = 0;
  let failing = 0;
  let checked = 0;
  let checkedHealthy = 0;
  for (const e of pool.all()) {
    const status = pool.status(e.record.id);
    if (status === 'active') active++;
    const fails = status === 'failed' || e.health === 'unhealthy' || e.health === 'dead';
    if (fails) failing++;
    if (e.health === 'unknown') continue;
    checked++;
    if (!fails && e.health === 'healthy') checkedHealthy++;
  }
  return { total: pool.size, active, failing, checked, checkedHealthy };
}

/**
 * The healthy share, in percent with two decimals, of the proxies whose health is known (a degraded
 * one is not healthy): a pool never checked is not "100% healthy" (0, with `checked` 0 telling why).
 */
export function healthyPercentage(s: PoolSummary): number {
  return s.checked === 0 ? 0 : Math.round((s.checkedHealthy / s.checked) * 10_000) / 100;
}

export type PoolHealth = 'healthy' | 'degraded' | 'unhealthy';

export function poolHealth(s: PoolSummary): PoolHealth {
  if (s.total === 0) return 'degraded';
  if (s.failing === 0) return 'healthy';
  return s.failing === s.total ? 'unhealthy' : 'degraded';
}
