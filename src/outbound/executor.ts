import type { Permit } from '../breaker/types.ts';
import { RotaError } from '../errors/rota-error.ts';
import { ATTEMPT_RELEASED, type CallerSignal } from '../lib/abort.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import { type AttemptResult, runAttempt, type Settled } from './attempt.ts';
import {
  type Call,
  type CallInput,
  type CallResult,
  type CallState,
  delivered,
  type ExecutorDeps,
  replayable,
} from './call.ts';
import { callError, describeAttempt, unsafeToRetryError } from './call-error.ts';
import { afterBan, poolEmpty, selection, waitBeforeRetry, waitForPace, waitForSlot } from './call-steps.ts';
import { isGateway, render } from './gateways.ts';
import { attemptDeadline, hedgeTime } from './hedge.ts';
import { InFlight, type Run } from './in-flight.ts';

import { callRecord, reportCall } from './report.ts';
import type { Work } from './work.ts';

export type { CallInput, CallResult, ExecutorDeps } from './call.ts';

type Step = 'started' | 'again' | 'none';

/**
 * One proxied call, whatever the door (POST request, an absolute-URI request or a tunnel of the
 * listeners): pick a proxy, run the call's Work through it, and on failure fail over to a different
 * proxy under the retry policy, all inside one deadline.
 *
 *   caller ──▶ Selector (sessions + strategy + breakers) ──▶ Permit ──▶ Work.run via the proxy ──▶ target
 *                 ▲                                                          │
 *                 └────────── failover: exclude tried, back off ◀────────────┘
 *
 * Hedging: a GET, HEAD or OPTIONS call still waiting, after ROTA_HEDGE_DELAY_S, on a proxy that has
 * not proven itself also asks the next proxy, and takes the first answer. A proxy that accepts
 * connections and never answers then costs the caller the hedge delay, not its share of the deadline.
 * An answer that does not reach the caller (overtaken, superseded, or its caller gone) is handed back
 * to its Work to be freed.
 */
export class Executor {
  private readonly d: ExecutorDeps;
  constructor(deps: ExecutorDeps) {
    this.d = deps;
  }

  /** then() rather than an async function: one frame less on every call (attempt.ts says what it gave). */
  execute<R>(input: CallInput<R>): Promise<CallResult<R>> {
    const started = this.d.monotonic();
    const global = this.d.retry.get();
    // A policy rule's retry fields over the global policy (policies/).
    const policy = input.rule?.retry === undefined ? global : { ...global, ...input.rule.retry };
    const budgetMs = Math.min(input.timeoutS, policy.timeout ?? Number.POSITIVE_INFINITY) * 1000;
    const c: Call<R> = {
      input,
      policy,
      deadline: started + budgetMs,
      attempts: [],
      inflight: new InFlight<Settled<R>>(),
      replayable: replayable(input.work as Work<unknown>, policy),
      winner: null,
    };
    return this.loop(c).then(
      (result) => {
        const call = callRecord(c, true, this.d.monotonic() - started);
        reportCall(this.d, c, call);
        result.callId = call.id;
        return result;
      },
      (err: unknown) => {
        const code = err instanceof RotaError ? err.code : 'INTERNAL_ERROR';
        reportCall(this.d, c, callRecord(c, false, this.d.monotonic() - started, code));
        throw err;
      },
    );
  }

  /**
   * The end of call `callId` (CallResult.callId), told by its door once the answer's body or the tunnel
   * is over: the bytes each way. For the request log; nothing else waits for it.
   */
  ended(callId: number | undefined, up: number, down: number): void {
    if (callId !== undefined) this.d.onCallEnd?.(callId, up, down);
  }

  private async loop<R>(c: Call<R>): Promise<CallResult<R>> {
    const { input, inflight, attempts } = c;
    const s: CallState<R> = {
      tried: new Set(),
      failed: [],
      lastError: null,
      answer: null,
      pause: false,
      made: 0,
    };
    let start = true;
    for (;;) {
      if (start) {
        // Decided without a promise unless it has to wait (a back-off, a free slot): the common case.
        const step = this.startAttempt(c, s);
        if ((typeof step === 'string' ? step : await step) === 'again') continue;
      }
      if (inflight.size === 0) break;
      const ev = await inflight.next(this.d.monotonic);
      // An attempt through an unproven proxy stalled: ask another proxy too, keep waiting for both.
      if (ev.type === 'hedge') {
        start = true;
        continue;
      }
      const callerGone = input.signal?.aborted === true;
      const { result, recordAt } = ev.value;
      const next = this.afterAttempt(c, s, ev.run.entry, result, recordAt, callerGone);
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
  private startAttempt<R>(c: Call<R>, s: CallState<R>): Step | Promise<Step> {
    const { attempts, inflight, policy, deadline } = c;
    if (attempts.length + inflight.size >= policy.max_attempts) return 'none';
    // A target answer in hand beats a timeout error: past the deadline the caller gets that answer.
    if (this.d.monotonic() >= deadline) {
      if (s.answer || inflight.size > 0) return 'none';
      throw callError(s.lastError, s.failed, true);
    }
    if (!s.pause) return this.pickAndLaunch(c, s);
    if (inflight.size > 0) return 'none';
    return waitBeforeRetry(this.d, c, s, attempts.length + 1).then((go) =>
      go ? this.pickAndLaunch(c, s) : 'none',
    );
  }

  private pickAndLaunch<R>(c: Call<R>, s: CallState<R>): Step | Promise<Step> {
    const { attempts, inflight } = c;
    const sel = selection(c, s);
    const entry = this.d.selector.pick(sel);
    if (!entry) {
      // Every proxy that could serve is at ROTA_PROXY_MAX_IN_FLIGHT: wait for a slot, not overload one.
      if (inflight.size === 0 && this.d.selector.cappedOnly(sel)) return waitForSlot(this.d, c, s);
      // A rule's min_interval_ms holds every proxy back from this host for now: wait for the first.
      const paceMs = inflight.size === 0 && sel.rule !== undefined ? this.d.selector.paceWaitMs(sel) : null;
      if (paceMs !== null) return waitForPace(this.d, c, s, paceMs);
      if (s.tried.size === 0) throw poolEmpty(this.d, c.input.onlyCountry, c.input.rule?.name);
      return 'none';
    }
    s.tried.add(entry.record.id);
    const permit = this.d.breakers.admit(entry.record.id);
    if (!permit) return 'again';
    s.made++;
    this.d.selector.started(entry, sel);
    this.launch(c, entry, permit, attempts.length + inflight.size + 1);
    return 'started';
  }

  /** Starts attempt `n` through `entry`, cancellable on its own when it may run beside another. */
  private launch<R>(c: Call<R>, entry: ProxyEntry, permit: Permit, n: number): void {
    const { input, policy, deadline } = c;
    const now = this.d.monotonic();
    const slice = c.replayable
      ? attemptDeadline(entry, deadline, policy.max_attempts - n + 1, now, this.d.connectTimeoutMs)
      : deadline;
    const hedge = {
      method: input.work.method,
      sessionId: input.sessionId,
      maxAttempts: policy.max_attempts,
      delayMs: this.d.hedgeDelayMs,
    };
    const hedgeAt = hedgeTime(hedge, entry, n, slice, now);
    // A gateway dials with this attempt's rendered credentials and is banned per provider session.
    const dial = isGateway(entry.record)
      ? render(
          this.d.providerSessions,
          entry.record,
          input.sessionId,
          input.onlyCountry ?? renderedCountry(input.country, input.rule?.filter?.countries, entry.country),
        )
      : null;
    const attempt = (signal: CallerSignal | undefined, onResponseStart: (() => void) | undefined) =>
      runAttempt(this.d, {
        entry,
        record: dial === null ? entry.record : dial.record,
        banKey: dial === null ? entry.record.id : dial.banKey,
        permit,
        n,
        work: input.work,
        host: input.host,
        port: input.port,
        rule: input.rule,
        deadline: slice,
        retryStatusCodes: policy.retry_status_codes,
        attempts: c.attempts,
        signal,
        onResponseStart,
      });
    if (hedgeAt === null && c.inflight.size === 0) {
      // The common case: one attempt at a time, nothing to cancel it but the caller.
      const done = attempt(input.signal, undefined);
      c.inflight.add({ entry, n, startedAt: now, done, hedgeAt, stalled: false, cancel: null, detach: null });
      return;
    }
    // It may run beside another attempt, or outlive the call: its own signal, which the caller's going
    // away aborts too until the call has its answer (detach).
    const own = new AbortController();
    const onCallerGone = () => own.abort(input.signal?.reason);
    if (input.signal?.aborted) onCallerGone();
    else input.signal?.addEventListener('abort', onCallerGone, { once: true });
    const detach = () => input.signal?.removeEventListener('abort', onCallerGone);
    const cancel = () => own.abort(ATTEMPT_RELEASED);
    // Once the target's answer has started, the proxy works: no hedge for a body still arriving. (The
    // answer cannot start before `run` is set: dispatching never calls back synchronously.)
    let run: Run<Settled<R>> | undefined;
    const onResponseStart = () => {
      if (run) run.hedgeAt = null;
    };
    const done = attempt(own.signal, onResponseStart);
    void done.then(detach);
    run = { entry, n, startedAt: now, done, hedgeAt, stalled: false, cancel, detach };
    c.inflight.add(run);
  }

  /** Learns from one attempt: `done` (answer the caller), `stop` (no further attempt) or `next`. */
  private afterAttempt<R>(
    c: Call<R>,
    s: CallState<R>,
    entry: ProxyEntry,
    result: AttemptResult<R>,
    recordAt: number,
    callerGone: boolean,
  ): 'done' | 'stop' | 'next' {
    if (result.type === 'response') {
      // A retryable answer kept so far is superseded by this one: free it.
      if (s.answer) c.input.work.discard(s.answer.result.response);
      const { rule, session } = c.input;
      s.answer = {
        result: {
          response: result.response,
          proxy: entry,
          attempts: s.made,
          rule: rule?.name,
          session: session?.id,
          // Set once the call is reported (execute): here already, so that the object keeps one shape.
          callId: undefined,
        },
        at: recordAt,
      };
      // Banned: another proxy, at once (the site refused an address, it is not overloaded); unless the
      // session keeps its address through a ban (`on_ban: keep`): then the ban is the caller's answer.
      if (result.banned) return afterBan(this.d, c, s, entry);
      if (!result.retryable) return 'done';
      s.pause = true;
      return c.replayable ? 'next' : 'stop';
    }
    const err = result.error;
    s.lastError = err;
    s.failed.push(describeAttempt(entry, err));
    // `aborted` is also a proxy deleted mid-call (its dispatcher closed): only a caller that went away
    // ends the call; otherwise another proxy may still answer.
    // `local`: Rota itself is short of files or memory; asking more proxies would only make it worse.
    // `invalid_request`: the request cannot be sent as given (a header value undici refuses), through
    // any proxy: asking another, after the retry policy's pause, only held the caller (20 s and more).
    if (
      callerGone ||
      err.kind === 'response_too_large' ||
      err.kind === 'target_tls' ||
      err.kind === 'target_forbidden' ||
      err.kind === 'invalid_request' ||
      err.kind === 'local'
    )
      return 'stop';
    if (err.mayHaveReachedTarget && !c.replayable) throw unsafeToRetryError(err, s.failed);
    // One exit of a gateway failed or could not reach the target: this session's next attempt and call
    // take another exit (the other sessions on the gateway keep theirs).
    if ((err.pairFault || err.proxyFault) && isGateway(entry.record)) {
      this.d.providerSessions.bump(c.input.sessionId, entry.record.id);
    }
    // A proxy fault is left at once: the next proxy is a different resource, there is nothing to back
    // off from. Only a target-side failure (it may be overloaded) waits before asking again.
    s.pause = !err.proxyFault && err.kind !== 'queue_timeout' && err.kind !== 'target_refused';
    return 'next';
  }
}

/**
 * The country a gateway renders for a call: the call's, else its own, unless the call's rule allows only
 * some countries: then the call's or its own when allowed, else the rule's first.
 */
function renderedCountry(
  asked: string | undefined,
  allowed: ReadonlySet<string> | null | undefined,
  own: string | null,
): string | null {
  if (allowed == null) return asked ?? own;
  if (asked !== undefined && allowed.has(asked)) return asked;
  if (own !== null && allowed.has(own)) return own;
  return allowed.values().next().value ?? own;
}
