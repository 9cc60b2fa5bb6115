import type { Pool, ProxyEntry } from './pool.ts';
import { hasCredentials } from './types.ts';

/** The public shape of a proxy (weight, country, tags included: docs/decisions.md). No credentials, ever. */
export function proxyView(pool: Pool, e: ProxyEntry) {
  const r = e.record;
  // With shared state, the cluster's counters of this proxy (within 2 s); otherwise this process's.
  const s = e.cluster ?? e.stats;
  return {
    id: r.id,
    url: e.url,
    protocol: r.protocol,
    status: pool.status(r.id),
    health: e.health,
    weight: r.weight,
    country: r.country,
    tags: [...r.tags],
    // Not by reading them: that would decrypt every proxy's credentials (NDJSON export, 100,000 of them)
    // and keep them in memory.
    has_credentials: hasCredentials(r),
    stats: {
      total_requests: s.total,
      successful_requests: s.success,
      failed_requests: s.failed,
      avg_latency_ms: s.success + s.failed === 0 ? 0 : round2(s.latencySumMs / (s.success + s.failed)),
    },
    created_at: new Date(r.createdAt).toISOString(),
    updated_at: new Date(r.updatedAt).toISOString(),
  };
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
