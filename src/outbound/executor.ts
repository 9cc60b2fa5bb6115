import { setTimeout as sleep } from 'node:timers/promises';
import type { BreakerRegistry } from '../breaker/registry.ts';
import type { Permit } from '../breaker/types.ts';
import { ApiError } from '../http/errors.ts';
import type { AttemptRecord, CallRecord } from '../metrics/calls.ts';
import { recordAttempt } from '../pool/health.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import type { DispatcherCache } from '../upstream/dispatchers.ts';
import { send } from '../upstream/send.ts';
import { UpstreamError, type UpstreamResponse } from '../upstream/types.ts';
import { callError, describeAttempt, type FailedAttempt, unsafeToRetryError } from './call-error.ts';
import { backoffSeconds, type RetryPolicy, type RetryPolicyHolder } from './retry-policy.ts';
import type { Selector } from './selector.ts';

export interface CallInput {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: Buffer | null;
  timeoutS: number;
  sessionId?: string | undefined;
  country?: string | undefined;
  signal?: AbortSignal;
}

export interface CallResult {
  response: UpstreamResponse;
  proxy: ProxyEntry;
  attempts: number;
}

export interface ExecutorDeps {
  selector: Selector;
  breakers: BreakerRegistry;
  dispatchers: DispatcherCache;
  retry: RetryPolicyHolder;
  monotonic: () => number;
  /** Wall clock, the breakers' time base (for Retry-After). */
  now: () => number;
  random: () => number;
  maxResponseBytes: number;
  connectTimeoutMs: number;
  onCall: (call: CallRecord) => void;
}

type AttemptResult =
  | { type: 'response'; response: UpstreamResponse; retryable: boolean }
  | { type: 'error'; error: UpstreamError };

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/**
 * One proxied call: pick a proxy, send, and on failure fail over to a different proxy under the retry
 * policy, all inside one deadline.
 *
 *   caller ──▶ Selector (strategy + breakers) ──▶ Permit ──▶ send() via the proxy's dispatcher ──▶ target
 *                 ▲                                                     │
 *                 └──────── failover: exclude tried, back off ◀─────────┘
 */
export class Executor {
  private readonly d: ExecutorDeps;
  constructor(deps: ExecutorDeps) {
    this.d = deps;
  }

  async execute(input: CallInput): Promise<CallResult> {
    const started = this.d.monotonic();
    const policy = this.d.retry.get();
    const budgetMs = Math.min(input.timeoutS, policy.timeout ?? Number.POSITIVE_INFINITY) * 1000;
    const deadline = started + budgetMs;
    const attempts: AttemptRecord[] = [];
    try {
      const result = await this.loop(input, policy, deadline, attempts);
      this.d.onCall({ ok: true, latencyMs: this.d.monotonic() - started, attempts });
      return result;
    } catch (err) {
      const code = err instanceof ApiError ? err.code : 'INTERNAL_ERROR';
      this.d.onCall({ ok: false, latencyMs: this.d.monotonic() - started, attempts, errorCode: code });
      throw err;
    }
  }

  private async loop(
    input: CallInput,
    policy: RetryPolicy,
    deadline: number,
    attempts: AttemptRecord[],
  ): Promise<CallResult> {
    const replayable = SAFE_METHODS.has(input.method) || policy.retry_non_idempotent;
    const tried = new Set<string>();
    const failed: FailedAttempt[] = [];
    let lastError: UpstreamError | null = null;
    let lastAnswer: CallResult | null = null;
    while (attempts.length < policy.max_attempts) {
      if (this.d.monotonic() >= deadline) throw callError(lastError, failed, true);
      const entry = this.d.selector.pick({
        exclude: tried,
        sessionId: input.sessionId,
        country: input.country,
      });
      if (!entry) {
        if (tried.size === 0) throw this.poolEmpty();
        break;
      }
      tried.add(entry.record.id);
      const permit = this.d.breakers.admit(entry.record.id);
      if (!permit) continue; // lost a half-open trial slot to a concurrent call: not an attempt
      const n = attempts.length + 1;
      const slice = replayable ? this.attemptDeadline(deadline, policy.max_attempts - n + 1) : deadline;
      const result = await this.attempt(entry, permit, input, slice, policy, n, attempts);
      if (result.type === 'response') {
        lastAnswer = { response: result.response, proxy: entry, attempts: n };
        if (!result.retryable || !replayable) return lastAnswer;
        await this.backoff(policy, n + 1, deadline);
        continue;
      }
      const err = result.error;
      lastError = err;
      failed.push(describeAttempt(entry, err));
      if (err.kind === 'aborted' || err.kind === 'response_too_large' || err.kind === 'target_tls') break;
      if (err.mayHaveReachedTarget && !replayable) throw unsafeToRetryError(err, failed);
      // A proxy fault is left at once: the next proxy is a different resource, there is nothing to back
      // off from. Only a target-side failure (it may be overloaded) waits before asking again.
      if (!err.proxyFault) await this.backoff(policy, n + 1, deadline);
    }
    if (lastAnswer) return lastAnswer; // every proxy got a retryable answer: the target's answer is the result
    throw callError(lastError, failed, this.d.monotonic() >= deadline);
  }

  private async attempt(
    entry: ProxyEntry,
    permit: Permit,
    input: CallInput,
    deadline: number,
    policy: RetryPolicy,
    n: number,
    attempts: AttemptRecord[],
  ): Promise<AttemptResult> {
    const t0 = this.d.monotonic();
    const sel = this.d.selector;
    sel.inFlight(entry, 1);
    let result: AttemptResult | undefined;
    try {
      const response = await send(this.d.dispatchers.get(entry.record), {
        url: input.url,
        method: input.method,
        headers: input.headers,
        body: input.body,
        deadline,
        maxResponseBytes: this.d.maxResponseBytes,
        ...(input.signal ? { signal: input.signal } : {}),
      });
      result = {
        type: 'response',
        response,
        retryable: policy.retry_status_codes.includes(response.statusCode),
      };
      return result;
    } catch (err) {
      const error =
        err instanceof UpstreamError
          ? err
          : new UpstreamError('proxy_protocol', 'unexpected upstream failure', {
              mayHaveReachedTarget: true,
              cause: err,
            });
      result = { type: 'error', error };
      return result;
    } finally {
      sel.inFlight(entry, -1);
      const latencyMs = this.d.monotonic() - t0;
      this.settle(entry, permit, result, latencyMs, n, attempts);
    }
  }

  /** Breaker, health, strategy and metrics learn the outcome; the permit is released whatever happened. */
  private settle(
    entry: ProxyEntry,
    permit: Permit,
    r: AttemptResult | undefined,
    latencyMs: number,
    n: number,
    attempts: AttemptRecord[],
  ): void {
    const proxyFault = r?.type === 'error' && r.error.proxyFault;
    const aborted = r === undefined || (r.type === 'error' && r.error.kind === 'aborted');
    permit.release(aborted ? 'neutral' : proxyFault ? 'failure' : 'success');
    if (aborted) return;
    recordAttempt(entry, !proxyFault, proxyFault, latencyMs);
    this.d.selector.record(entry, { ok: r.type === 'response' && !r.retryable, latencyMs, proxyFault });
    const outcome: AttemptRecord['outcome'] =
      r.type === 'response'
        ? r.retryable
          ? 'target_error'
          : 'success'
        : r.error.kind === 'timeout'
          ? 'timeout'
          : proxyFault
            ? 'proxy_error'
            : 'target_error';
    attempts.push({
      proxyId: entry.record.id,
      attempt: n,
      outcome,
      latencyMs,
      ...(r.type === 'error' ? { kind: r.error.kind } : {}),
    });
  }

  /**
   * A proxy that accepts the connection and never answers looks, in absolute-URI form, exactly like a slow
   * target: only time tells them apart. So that one such proxy cannot eat the whole deadline, an attempt
   * that can still fail over gets an equal share of what is left (never less than two connect timeouts).
   */
  private attemptDeadline(deadline: number, attemptsLeft: number): number {
    if (attemptsLeft <= 1) return deadline;
    const now = this.d.monotonic();
    const left = deadline - now;
    const share = Math.max(left / attemptsLeft, 2 * this.d.connectTimeoutMs);
    return Math.min(deadline, now + share);
  }

  private async backoff(policy: RetryPolicy, nextAttempt: number, deadline: number): Promise<void> {
    const ms = backoffSeconds(policy, nextAttempt, this.d.random) * 1000;
    const left = deadline - this.d.monotonic();
    if (ms > 0 && left > 0) await sleep(Math.min(ms, left));
  }

  private poolEmpty(): ApiError {
    const at = this.d.breakers.earliestHalfOpenAt();
    const headers: Record<string, string> = {};
    if (at !== null) headers['retry-after'] = String(Math.max(1, Math.ceil((at - this.d.now()) / 1000)));
    const message = at === null ? 'No proxies configured' : 'Every proxy circuit breaker is open';
    return new ApiError('PROXY_POOL_EMPTY', message, {
      headers,
      details: { retry_after_s: headers['retry-after'] ? Number(headers['retry-after']) : null },
    });
  }
}
