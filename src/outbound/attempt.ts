import type { Permit } from '../breaker/types.ts';
import type { AttemptRecord } from '../metrics/calls.ts';
import { recordAttempt } from '../pool/health.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import { UpstreamError } from '../upstream/types.ts';
import type { Selector } from './selector.ts';
import type { Work } from './work.ts';

/**
 * One attempt of a call through one proxy, and what everything learns from it.
 *
 *   Permit ──▶ Work.run() through the proxy ──▶ result ──▶ breaker, health, strategy, attempt record
 */

export type AttemptResult<R> =
  | { type: 'response'; response: R; retryable: boolean }
  | { type: 'error'; error: UpstreamError };

/** An attempt's result, and where its record went in the call's attempt records (-1: not recorded). */
export interface Settled<R> {
  result: AttemptResult<R>;
  recordAt: number;
}

export interface AttemptDeps {
  readonly selector: Selector;
  readonly monotonic: () => number;
}

export interface AttemptInput<R> {
  readonly entry: ProxyEntry;
  readonly permit: Permit;
  /** 1-based attempt number within the call. */
  readonly n: number;
  readonly work: Work<R>;
  readonly deadline: number;
  readonly signal?: AbortSignal | undefined;
  readonly onResponseStart?: (() => void) | undefined;
  readonly retryStatusCodes: readonly number[];
  /** The call's records: this attempt's is appended when it ends. */
  readonly attempts: AttemptRecord[];
}

export async function runAttempt<R>(d: AttemptDeps, a: AttemptInput<R>): Promise<Settled<R>> {
  const t0 = d.monotonic();
  d.selector.inFlight(a.entry, 1);
  let result: AttemptResult<R>;
  try {
    const response = await a.work.run(a);
    const status = a.work.status(response);
    result = {
      type: 'response',
      response,
      retryable: status !== null && a.retryStatusCodes.includes(status),
    };
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

function outcomeOf<R>(r: AttemptResult<R>, proxyFault: boolean): AttemptRecord['outcome'] {
  if (r.type === 'response') return r.retryable ? 'target_error' : 'success';
  if (r.error.kind === 'timeout' || r.error.kind === 'queue_timeout') return 'timeout';
  return proxyFault ? 'proxy_error' : 'target_error';
}

/**
 * Breaker, health, strategy and metrics learn the outcome; the permit is released whatever happened.
 * Returns where the attempt's record went in `attempts`, or -1 when it was not recorded.
 */
function settle<R>(d: AttemptDeps, a: AttemptInput<R>, r: AttemptResult<R>, latencyMs: number): number {
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
