import { setTimeout as sleep } from 'node:timers/promises';
import type { BreakerRegistry } from '../breaker/registry.ts';
import type { Permit } from '../breaker/types.ts';
import { ApiError } from '../http/errors.ts';
import type { AttemptRecord, CallRecord } from '../metrics/calls.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import type { DispatcherCache } from '../upstream/dispatchers.ts';
import type { UpstreamError, UpstreamResponse } from '../upstream/types.ts';
import { type AttemptResult, runAttempt, type Settled } from './attempt.ts';
import {
  callError,
  describeAttempt,
  type FailedAttempt,
  poolEmptyError,
  unsafeToRetryError,
} from './call-error.ts';
import { InFlight, type Run } from './in-flight.ts';
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
  /** ROTA_HEDGE_DELAY_S in ms; 0 never asks a second proxy while the first may still answer. */
  hedgeDelayMs: number;
  onCall: (call: CallRecord) => void;
  /** An attempt that ended after its call was reported (a hedge overtook it): per-proxy numbers only. */
  onLateAttempt: (attempt: AttemptRecord) => void;
  /** Where a failure of that late bookkeeping is reported: it must never become an unhandled rejection. */
  onError: (err: unknown) => void;
}

/** The request of an attempt that must end by `deadline` (the caller's signal is added by the caller). */
function request(input: CallInput, deadline: number) {
  return { url: input.url, method: input.method, headers: input.headers, body: input.body, deadline };
}

/** What every step of one call needs. */
interface Call {
  readonly input: CallInput;
  readonly policy: RetryPolicy;
  readonly deadline: number;
  readonly attempts: AttemptRecord[];
  readonly inflight: InFlight<Settled>;
  readonly replayable: boolean;
  /** The attempt whose answer the caller got, once there is one. */
  winner: Run<Settled> | null;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/**
 * Only read-only methods are hedged. An idempotent write (PUT, DELETE) may be replayed after a failure,
 * but a hedge sends it twice while the first copy still runs, and that copy, left to finish after the
 * caller has its answer, could land after the caller's next write.
 */
const HEDGE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A proxy that has answered before and not failed since: it gets the whole deadline, and no hedge. */
function isProven(entry: ProxyEntry): boolean {
  return entry.stats.success > 0 && entry.consecutiveFailures === 0;
}

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
 *
 * Hedging: a GET, HEAD or OPTIONS call still waiting, after ROTA_HEDGE_DELAY_S, on a proxy that has
 * not proven itself also asks the next proxy, and takes the first answer. A proxy that accepts
 * connections and never answers then costs the caller the hedge delay, not its share of the deadline.
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
    const c: Call = {
      input,
      policy,
      deadline: started + budgetMs,
      attempts: [],
      inflight: new InFlight<Settled>(),
      replayable: SAFE_METHODS.has(input.method) || policy.retry_non_idempotent,
      winner: null,
    };
    try {
      const result = await this.loop(c);
      this.report(c, { ok: true, latencyMs: this.d.monotonic() - started, attempts: c.attempts });
      return result;
    } catch (err) {
      const code = err instanceof ApiError ? err.code : 'INTERNAL_ERROR';
      const latencyMs = this.d.monotonic() - started;
      this.report(c, { ok: false, latencyMs, attempts: c.attempts, errorCode: code });
      throw err;
    }
  }

  /**
   * Reports the call now, as the caller sees it. Attempts that the answering one overtook (their proxy
   * stayed silent while one asked later answered) run on to the end of their own share of the deadline,
   * so that a proxy that never answers still fails its attempts and opens its breaker; each is reported
   * on its own when it ends. Any other attempt still running is cancelled without blame.
   */
  private report(c: Call, call: CallRecord): void {
    const winner = c.winner;
    const delivered = winner ? { ...call, deliveredAttempt: winner.n } : call;
    if (c.inflight.size === 0) {
      this.d.onCall(delivered);
      return;
    }
    void c.inflight
      .release(winner)
      .then((behind) => {
        // The overtaken attempts add their records to c.attempts later: the call keeps what it had.
        this.d.onCall({ ...delivered, attempts: c.attempts.slice() });
        for (const r of behind) {
          void r.done
            .then(({ recordAt }) => {
              const late = c.attempts[recordAt];
              if (late) this.d.onLateAttempt(late);
            })
            .catch(this.d.onError);
        }
      })
      .catch(this.d.onError);
  }

  private async loop(c: Call): Promise<CallResult> {
    const { input, inflight, attempts } = c;
    const s: CallState = {
      tried: new Set(),
      failed: [],
      lastError: null,
      answer: null,
      pause: false,
      made: 0,
    };
    let start = true;
    for (;;) {
      if (start && (await this.startAttempt(c, s)) === 'again') continue;
      if (inflight.size === 0) break;
      const ev = await inflight.next(this.d.monotonic);
      // An attempt through an unproven proxy stalled: ask another proxy too, keep waiting for both.
      if (ev.type === 'hedge') {
        start = true;
        continue;
      }
      const callerGone = input.signal?.aborted === true;
      const { result, recordAt } = ev.value;
      const next = this.afterAttempt(s, ev.run.entry, result, recordAt, c.replayable, callerGone);
      if (next === 'done' && s.answer) {
        c.winner = ev.run;
        return s.answer.result;
      }
      if (next === 'stop') break;
      // Another attempt runs meanwhile: wait for it, unless it too has stalled.
      start = inflight.allStalled();
    }
    // The target's last answer, retryable as it may be, is the result when no better one came.
    if (s.answer) return delivered({ ...s.answer.result, attempts: s.made }, attempts, s.answer.at);
    throw callError(s.lastError, s.failed, this.d.monotonic() >= c.deadline);
  }

  /**
   * Picks a proxy and starts an attempt through it: `started`, `again` (lost a half-open trial slot to a
   * concurrent call: not an attempt, pick again) or `none` (no attempt is worth starting now).
   */
  private async startAttempt(c: Call, s: CallState): Promise<'started' | 'again' | 'none'> {
    const { attempts, inflight, policy, deadline } = c;
    if (attempts.length + inflight.size >= policy.max_attempts) return 'none';
    // A target answer in hand beats a timeout error: past the deadline the caller gets that answer.
    if (this.d.monotonic() >= deadline) {
      if (s.answer || inflight.size > 0) return 'none';
      throw callError(s.lastError, s.failed, true);
    }
    if (s.pause) {
      if (inflight.size > 0) return 'none';
      if (!(await this.waitBeforeRetry(s, c.input, policy, deadline, attempts.length + 1))) return 'none';
    }
    const entry = this.d.selector.pick({
      exclude: s.tried,
      sessionId: c.input.sessionId,
      country: c.input.country,
    });
    if (!entry) {
      if (s.tried.size === 0) throw this.poolEmpty();
      return 'none';
    }
    s.tried.add(entry.record.id);
    const permit = this.d.breakers.admit(entry.record.id);
    if (!permit) return 'again';
    s.made++;
    this.launch(c, entry, permit, attempts.length + inflight.size + 1);
    return 'started';
  }

  /** Starts attempt `n` through `entry`, cancellable on its own when it may run beside another. */
  private launch(c: Call, entry: ProxyEntry, permit: Permit, n: number): void {
    const { input, policy, deadline } = c;
    const slice = c.replayable
      ? this.attemptDeadline(entry, deadline, policy.max_attempts - n + 1)
      : deadline;
    const startedAt = this.d.monotonic();
    const hedgeAt = this.hedgeTime(c, entry, n, slice, startedAt);
    const attempt = (extra: { signal?: AbortSignal; onResponseStart?: () => void }) =>
      runAttempt(this.d, {
        entry,
        permit,
        n,
        request: { ...request(input, slice), ...extra },
        retryStatusCodes: policy.retry_status_codes,
        attempts: c.attempts,
      });
    if (hedgeAt === null && c.inflight.size === 0) {
      // The common case: one attempt at a time, nothing to cancel it but the caller.
      const done = attempt(input.signal ? { signal: input.signal } : {});
      c.inflight.add({ entry, n, startedAt, done, hedgeAt, stalled: false, cancel: null, detach: null });
      return;
    }
    // It may run beside another attempt, or outlive the call: its own signal, which the caller's going
    // away aborts too until the call has its answer (detach).
    const own = new AbortController();
    const onCallerGone = () => own.abort(input.signal?.reason);
    if (input.signal?.aborted) onCallerGone();
    else input.signal?.addEventListener('abort', onCallerGone, { once: true });
    const detach = () => input.signal?.removeEventListener('abort', onCallerGone);
    const cancel = () => own.abort();
    // Once the target's answer has started, the proxy works: no hedge for a body still arriving. (The
    // answer cannot start before `run` is set: dispatching never calls back synchronously.)
    let run: Run<Settled> | undefined;
    const onResponseStart = () => {
      if (run) run.hedgeAt = null;
    };
    const done = attempt({ signal: own.signal, onResponseStart });
    void done.then(detach);
    run = { entry, n, startedAt, done, hedgeAt, stalled: false, cancel, detach };
    c.inflight.add(run);
  }

  /**
   * When the call may ask another proxy too, if this attempt has not answered by then. Only a GET, HEAD
   * or OPTIONS call (HEDGE_METHODS), only through a proxy that has not proven itself (a proven one gets
   * the whole deadline: a slow target must not be answered twice), only while another attempt may
   * follow, and only before the attempt's own share of the deadline ends (then it fails over anyway).
   * Never for a call with a `session_id`: a sticky session keeps its proxy until that proxy fails, and
   * a hedge would re-pin it.
   */
  private hedgeTime(c: Call, entry: ProxyEntry, n: number, slice: number, now: number): number | null {
    const delay = this.d.hedgeDelayMs;
    if (!HEDGE_METHODS.has(c.input.method) || delay <= 0 || n >= c.policy.max_attempts) return null;
    if (isProven(entry) || c.input.sessionId) return null;
    return now + delay < slice ? now + delay : null;
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

  /**
   * A proxy that accepts the connection and never answers looks, in absolute-URI form, exactly like a slow
   * target: only time tells them apart. So that such a proxy cannot eat the whole deadline, an attempt
   * through a proxy that has not proven itself (no success yet, or failing lately) gets an equal share of
   * what is left (never less than two connect timeouts) when it can still fail over. A proven proxy gets
   * the whole deadline: a slow target must not be cut short and blamed on a proxy that works.
   */
  private attemptDeadline(entry: ProxyEntry, deadline: number, attemptsLeft: number): number {
    if (attemptsLeft <= 1 || isProven(entry)) return deadline;
    const now = this.d.monotonic();
    const left = deadline - now;
    const share = Math.max(left / attemptsLeft, 2 * this.d.connectTimeoutMs);
    return Math.min(deadline, now + share);
  }

  private poolEmpty(): ApiError {
    return poolEmptyError(this.d.breakers.earliestHalfOpenAt(), this.d.now());
  }
}
