import type { ProxyEntry } from './pool.ts';
import type { Health } from './types.ts';

/**
 * docs/decisions.md, "Proxies and health": health follows consecutive proxy-attributable failures (1 →
 * degraded, 3 → unhealthy, 5 → dead); one success makes it healthy again. No state is permanent.
 */
export function healthAfter(consecutiveFailures: number): Health {
  if (consecutiveFailures >= 5) return 'dead';
  if (consecutiveFailures >= 3) return 'unhealthy';
  if (consecutiveFailures >= 1) return 'degraded';
  return 'healthy';
}

/** Records one attempt on the entry. A target's own error status is not the proxy's fault: it counts as a success. */
export function recordAttempt(e: ProxyEntry, ok: boolean, proxyFault: boolean, latencyMs: number): void {
  e.stats.total++;
  e.stats.latencySumMs += latencyMs;
  if (ok || !proxyFault) {
    e.stats.success++;
    e.consecutiveFailures = 0;
    e.health = 'healthy';
  } else {
    e.stats.failed++;
    e.consecutiveFailures++;
    e.health = healthAfter(e.consecutiveFailures);
  }
}

/** A ban (bans/): the request went through, the site refused the address. Counted, health untouched. */
export function recordBanned(e: ProxyEntry, latencyMs: number): void {
  e.stats.total++;
  e.stats.latencySumMs += latencyMs;
}
