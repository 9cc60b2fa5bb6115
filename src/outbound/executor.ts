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
import {
  callError,
  describeAttempt,
  type FailedAttempt,
  poolEmptyError,
  unsafeToRetryError,
} from './call-error.ts';
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

/** What one call has learned so far, across its attempts. */
interface CallState {
  readonly tried: Set<string>;
  readonly failed: FailedAttempt[];
  lastError: UpstreamError | null;
  /** The latest target answer and the index of its attempt record. */
  answer: { result: CallResult; at: number } | null;
  /** The target failed or asked for a retry: wait before asking it again. */
  pause: boolean;
  /**
   * Attempts made, for the caller's `attempts`. One cut short because its proxy was deleted counts here,
   * as the caller did go through that proxy, but not in the attempt records (it blames no proxy).
   */
  made: number;
}

/**
 * A retryable answer is recorded as `target_error` when it arrives, since another proxy may still do
 * better. When it turns out to be the answer the caller gets, its attempt is the call's `success`
 * (metrics/calls.ts), so that success-by-attempt and per-proxy successes agree with the caller's view.
 */
function delivered(answer: CallResult, attempts: AttemptRecord[], at: number): CallResult {
  const rec = attempts[at];
  if (rec && rec.outcome !== 'success') attempts[at] = { ...rec, outcome: 'success' };
  return answer;
}

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
    const s: CallState = {
      tried: new Set(),
      failed: [],
      lastError: null,
      answer: null,
      pause: false,
      made: 0,
    };
    while (attempts.length < policy.max_attempts) {
      // A target answer in hand beats a timeout error: past the deadline the caller gets that answer.
      if (this.d.monotonic() >= deadline) {
        if (s.answer) break;
        throw callError(s.lastError, s.failed, true);
      }
      if (s.pause && !(await this.waitBeforeRetry(s, input, policy, deadline, attempts.length + 1))) break;
      const entry = this.d.selector.pick({
        exclude: s.tried,
        sessionId: input.sessionId,
        country: input.country,
      });
      if (!entry) {
        if (s.tried.size === 0) throw this.poolEmpty();
        break;
      }
      s.tried.add(entry.record.id);
      const permit = this.d.breakers.admit(entry.record.id);
      if (!permit) continue; // lost a half-open trial slot to a concurrent call: not an attempt
      const n = attempts.length + 1;
      const slice = replayable
        ? this.attemptDeadline(entry, deadline, policy.max_attempts - n + 1)
        : deadline;
      s.made++;
      const result = await this.attempt(entry, permit, input, slice, policy, n, attempts);
      const callerGone = input.signal?.aborted === true;
      const next = this.afterAttempt(s, entry, result, attempts.length - 1, replayable, callerGone);
      if (next === 'done' && s.answer) return s.answer.result;
      if (next === 'stop') break;
    }
    // The target's last answer, retryable as it may be, is the result when no better one came.
    if (s.answer) return delivered({ ...s.answer.result, attempts: s.made }, attempts, s.answer.at);
    throw callError(s.lastError, s.failed, this.d.monotonic() >= deadline);
  }

  /** Learns from one attempt: `done` (answer the caller), `stop` (no further attempt) or `next`. */
  private afterAttempt(
    s: CallState,
    entry: ProxyEntry,
    result: AttemptResult,
    recordAt: number,
    replayable: boolean,
    callerGone: boolean,
  ): 'done' | 'stop' | 'next' {
    if (result.type === 'response') {
      s.answer = { result: { response: result.response, proxy: entry, attempts: s.made }, at: recordAt };
      if (!result.retryable) return 'done';
      s.pause = true;
      return replayable ? 'next' : 'stop';
    }
    const err = result.error;
    s.lastError = err;
    s.failed.push(describeAttempt(entry, err));
    // `aborted` is also a proxy deleted mid-call (its dispatcher closed): only a caller that went away
    // ends the call; otherwise another proxy may still answer.
    if (
      callerGone ||
      err.kind === 'response_too_large' ||
      err.kind === 'target_tls' ||
      err.kind === 'target_forbidden'
    )
      return 'stop';
    if (err.mayHaveReachedTarget && !replayable) throw unsafeToRetryError(err, s.failed);
    // A proxy fault is left at once: the next proxy is a different resource, there is nothing to back
    // off from. Only a target-side failure (it may be overloaded) waits before asking again.
    s.pause = !err.proxyFault && err.kind !== 'queue_timeout';
    return 'next';
  }

  /**
   * The wait before asking the target again. Only when another attempt can follow (never after the
   * last proxy), and before the pick, so that what is picked is still in the pool once it is over.
   * False when no further attempt is worth making: no proxy left, no time left, or the caller gone.
   */
  private async waitBeforeRetry(
    s: CallState,
    input: CallInput,
    policy: RetryPolicy,
    deadline: number,
    nextAttempt: number,
  ): Promise<boolean> {
    s.pause = false;
    if (!this.d.selector.hasCandidate(s.tried)) return false;
    const ms = backoffSeconds(policy, nextAttempt, this.d.random) * 1000;
    // A wait that reaches the deadline leaves no time to ask again: the caller is better served now.
    if (ms >= deadline - this.d.monotonic()) return false;
    if (ms > 0) {
      try {
        await sleep(ms, undefined, input.signal ? { signal: input.signal } : undefined);
      } catch {
        return false; // the caller went away during the wait
      }
    }
    return true;
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
        : r.error.kind === 'timeout' || r.error.kind === 'queue_timeout'
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
   * target: only time tells them apart. So that such a proxy cannot eat the whole deadline, an attempt
   * through a proxy that has not proven itself (no success yet, or failing lately) gets an equal share of
   * what is left (never less than two connect timeouts) when it can still fail over. A proven proxy gets
   * the whole deadline: a slow target must not be cut short and blamed on a proxy that works.
   */
  private attemptDeadline(entry: ProxyEntry, deadline: number, attemptsLeft: number): number {
    const proven = entry.stats.success > 0 && entry.consecutiveFailures === 0;
    if (attemptsLeft <= 1 || proven) return deadline;
    const now = this.d.monotonic();
    const left = deadline - now;
    const share = Math.max(left / attemptsLeft, 2 * this.d.connectTimeoutMs);
    return Math.min(deadline, now + share);
  }

  private poolEmpty(): ApiError {
    return poolEmptyError(this.d.breakers.earliestHalfOpenAt(), this.d.now());
  }
}
