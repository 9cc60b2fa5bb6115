import { RotaError } from '../errors/rota-error.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import type { UpstreamError } from '../upstream/types.ts';

export interface FailedAttempt {
  proxy_id: string;
  proxy: string;
  kind: string;
}

export function describeAttempt(e: ProxyEntry, err: UpstreamError): FailedAttempt {
  return { proxy_id: e.record.id, proxy: e.url, kind: err.kind };
}

/** The API error for a call that ended without a target answer, from its last failure. */
export function callError(
  last: UpstreamError | null,
  failed: FailedAttempt[],
  deadlinePassed: boolean,
): RotaError {
  const details = { attempts: failed };
  if (deadlinePassed || last?.kind === 'timeout' || last?.kind === 'queue_timeout') {
    return new RotaError('REQUEST_TIMEOUT', 'The request did not complete within its timeout', { details });
  }
  switch (last?.kind) {
    case 'target_unreachable':
      return new RotaError('TARGET_UNREACHABLE', 'The target could not be reached through the proxies', {
        details,
      });
    case 'response_too_large':
      return new RotaError('REQUEST_FAILED', 'The target response is larger than ROTA_MAX_RESPONSE_BYTES', {
        details,
      });
    case 'target_forbidden':
      return new RotaError('TARGET_FORBIDDEN', 'Target not allowed: it resolves to a forbidden address', {
        details: { ...details, reason: 'rebinding' },
      });
    case 'target_tls':
      return certificateRefused(last)
        ? new RotaError('TARGET_CERT_INVALID', "The target's certificate is not valid", { details })
        : new RotaError('REQUEST_FAILED', 'TLS with the target failed', { details });
    case 'target_refused':
      return new RotaError('PROXY_FAILOVER_EXHAUSTED', 'Every proxy tried refused this target', { details });
    case 'local':
      return new RotaError('SERVICE_UNAVAILABLE', 'Rota is short of a local resource or failed internally', {
        details,
      });
    case 'aborted':
      return new RotaError('REQUEST_FAILED', 'The request was aborted', { details });
    case 'invalid_request':
      return new RotaError('REQUEST_FAILED', 'The request cannot be sent as given', { details });
    default:
      return new RotaError('PROXY_FAILOVER_EXHAUSTED', 'Every proxy tried failed', { details });
  }
}

/** A failure after the request may have reached the target, on a call that must not be replayed. */
export function unsafeToRetryError(last: UpstreamError, failed: FailedAttempt[]): RotaError {
  const details = { attempts: failed, reason: 'non_idempotent' };
  if (last.kind === 'timeout') {
    return new RotaError(
      'REQUEST_TIMEOUT',
      'The request timed out after it may have reached the target; not replayed',
      { details },
    );
  }
  return new RotaError(
    'PROXY_ERROR',
    'The proxy failed after the request may have reached the target; not replayed',
    { details },
  );
}

/**
 * 503 PROXY_POOL_EMPTY. `earliestAdmit` is when the first breaker admits a request again (epoch ms), or
 * null when there is no proxy at all; with one, `Retry-After` tells the caller how long to wait.
 */
export function poolEmptyError(
  earliestAdmit: number | null,
  now: number,
  none = 'No proxies configured',
): RotaError {
  if (earliestAdmit === null) {
    return new RotaError('PROXY_POOL_EMPTY', none, { details: { retry_after_s: null } });
  }
  const seconds = Math.max(1, Math.ceil((earliestAdmit - now) / 1000));
  return new RotaError('PROXY_POOL_EMPTY', 'Every proxy circuit breaker is open', {
    headers: { 'retry-after': String(seconds) },
    details: { retry_after_s: seconds },
  });
}

/**
 * 429 HOST_RATE_LIMITED: a policy rule's pace (`host_rate_limit`, or `min_interval_ms` through every
 * proxy) leaves no start for this call within its timeout. `Retry-After` says when one would be free.
 */
export function hostRateLimited(
  rule: string,
  waitMs: number,
  by: 'host_rate_limit' | 'min_interval_ms',
): RotaError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new RotaError(
    'HOST_RATE_LIMITED',
    `The ${by} of policy rule ${rule} leaves no start within the timeout`,
    {
      headers: { 'retry-after': String(seconds) },
      details: { rule, retry_after_s: seconds },
    },
  );
}

/** TLS errors that say the target's certificate was not trusted or not its name's. */
const CERT_REFUSED = /^(CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_(GET|VERIFY)|ERR_TLS_CERT_ALTNAME)/;

function certificateRefused(err: UpstreamError): boolean {
  const code = (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && CERT_REFUSED.test(code);
}
