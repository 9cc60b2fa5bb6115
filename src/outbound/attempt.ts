import type { Permit } from '../breaker/types.ts';
import type { AttemptRecord } from '../metrics/calls.ts';
import { recordAttempt } from '../pool/health.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import type { DispatcherCache } from '../upstream/dispatchers.ts';
import { send } from '../upstream/send.ts';
import { UpstreamError, type UpstreamRequest, type UpstreamResponse } from '../upstream/types.ts';
import type { Selector } from './selector.ts';

/**
 * One attempt of a call through one proxy, and what everything learns from it.
 *
 *   Permit ──▶ send() via the proxy's dispatcher ──▶ result ──▶ breaker, health, strategy, attempt record
 */

export type AttemptResult =
  | { type: 'response'; response: UpstreamResponse; retryable: boolean }
  | { type: 'error'; error: UpstreamError };

/** An attempt's result, and where its record went in the call's attempt records (-1: not recorded). */
export interface Settled {
  result: AttemptResult;
  recordAt: number;
}

export interface AttemptDeps {
  readonly selector: Selector;
  readonly dispatchers: DispatcherCache;
  readonly monotonic: () => number;
  readonly maxResponseBytes: number;
}

export interface AttemptInput {
  readonly entry: ProxyEntry;
  readonly permit: Permit;
  /** 1-based attempt number within the call. */
  readonly n: number;
  readonly request: Omit<UpstreamRequest, 'maxResponseBytes'>;
  readonly retryStatusCodes: readonly number[];
  /** The call's records: this attempt's is appended when it ends. */
  readonly attempts: AttemptRecord[];
}

export async function runAttempt(d: AttemptDeps, a: AttemptInput): Promise<Settled> {
  const t0 = d.monotonic();
  d.selector.inFlight(a.entry, 1);
  let result: AttemptResult;
  try {
    const response = await send(d.dispatchers.get(a.entry.record), {
      ...a.request,
      maxResponseBytes: d.maxResponseBytes,
    });
    result = { type: 'response', response, retryable: a.retryStatusCodes.includes(response.statusCode) };
  } catch (err) {
    const error =
      err instanceof UpstreamError
        ? err
        : new UpstreamError('proxy_protocol', 'unexpected upstream failure', {
            mayHaveReachedTarget: true,
            cause: err,
          });
    result = { type: 'error', error };
  } finally {
    d.selector.inFlight(a.entry, -1);
  }
  return { result, recordAt: settle(d, a, result, d.monotonic() - t0) };
}

function outcomeOf(r: AttemptResult, proxyFault: boolean): AttemptRecord['outcome'] {
  if (r.type === 'response') return r.retryable ? 'target_error' : 'success';
  if (r.error.kind === 'timeout' || r.error.kind === 'queue_timeout') return 'timeout';
  return proxyFault ? 'proxy_error' : 'target_error';
}

/**
 * Breaker, health, strategy and metrics learn the outcome; the permit is released whatever happened.
 * Returns where the attempt's record went in `attempts`, or -1 when it was not recorded.
 */
function settle(d: AttemptDeps, a: AttemptInput, r: AttemptResult, latencyMs: number): number {
  const proxyFault = r.type === 'error' && r.error.proxyFault;
  const aborted = r.type === 'error' && r.error.kind === 'aborted';
  a.permit.release(aborted ? 'neutral' : proxyFault ? 'failure' : 'success');
  if (aborted) return -1;
  recordAttempt(a.entry, !proxyFault, proxyFault, latencyMs);
  d.selector.record(a.entry, { ok: r.type === 'response' && !r.retryable, latencyMs, proxyFault });
  a.attempts.push({
    proxyId: a.entry.record.id,
    attempt: a.n,
    outcome: outcomeOf(r, proxyFault),
    latencyMs,
    ...(r.type === 'error' ? { kind: r.error.kind } : {}),
  });
  return a.attempts.length - 1;
}
