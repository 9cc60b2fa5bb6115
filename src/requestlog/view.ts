import type { AttemptRecord } from '../metrics/calls.ts';
import type { RequestRecordT } from '../schemas/requests.ts';
import type { LogEntry } from './entry.ts';

/**
 * A log entry as the API shows it, built when read (never on the call's path). Nothing in it comes from
 * a header, a body or a query string; hosts are names, proxies are ids and safe labels.
 */

/** A proxy's label for people (host:port, told apart when several share it), or null once it is gone. */
export type LabelOf = (proxyId: string) => string | null;

const round = (ms: number) => Math.round(ms * 100) / 100;

function attemptView(a: AttemptRecord, labelOf: LabelOf): RequestRecordT['attempts'][number] {
  return {
    attempt: a.attempt,
    proxy_id: a.proxyId,
    proxy_label: labelOf(a.proxyId),
    outcome: a.outcome,
    kind: a.kind ?? null,
    status: a.status ?? null,
    latency_ms: round(a.latencyMs),
  };
}

export function recordView(e: LogEntry, labelOf: LabelOf): RequestRecordT {
  const c = e.call;
  const attempts = c.attempts.map((a) => attemptView(a, labelOf));
  attempts.sort((x, y) => x.attempt - y.attempt);
  return {
    id: c.id ?? 0,
    time: new Date(e.at).toISOString(),
    door: c.door ?? 'api',
    method: c.method ?? 'GET',
    scheme: c.scheme ?? null,
    host: c.host ?? '',
    port: c.port ?? null,
    path: e.path,
    session_id: c.sessionId ?? null,
    rule: c.rule ?? null,
    attempts,
    proxy_id: e.proxyId(),
    status: e.status(),
    outcome: e.outcome(),
    error_code: c.errorCode ?? null,
    ban_seen: e.banSeen(),
    latency_ms: round(c.latencyMs),
    duration_ms: e.durationMs === null ? null : round(e.durationMs),
    bytes_up: e.up,
    bytes_down: e.down,
    open: e.open,
  };
}
