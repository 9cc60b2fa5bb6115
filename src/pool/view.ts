import { safeLabel } from './label.ts';
import type { Pool, ProxyEntry } from './pool.ts';
import { hasCredentials, isGateway } from './types.ts';

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
    kind: isGateway(r) ? ('gateway' as const) : ('static' as const),
    label: r.label ?? null,
    display_label: safeLabel(r),
    exit_ip: e.exit?.ip ?? null,
    exit_ip_seen_at: e.exit ? new Date(e.exit.seenAt).toISOString() : null,
    exit_country: e.exit?.country ?? null,
    exit_asn: e.exit?.asn ?? null,
    exit_shared_with: pool.exitSharedWith(e),
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

/** An exported line with its credentials (`export?credentials=true`): what an import takes back. */
export function proxyWithCredentials(pool: Pool, e: ProxyEntry) {
  const r = e.record;
  return {
    ...proxyView(pool, e),
    ...(r.username === null ? {} : { username: r.username }),
    ...(r.password === null ? {} : { password: r.password }),
    ...(r.usernameTemplate ? { username_template: r.usernameTemplate } : {}),
    ...(r.passwordTemplate ? { password_template: r.passwordTemplate } : {}),
  };
}
