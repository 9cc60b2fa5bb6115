import type { TargetAnswer } from '../bans/detect.ts';
import type { BanRule } from '../bans/judge.ts';
import type { BreakerRegistry } from '../breaker/registry.ts';
import type { CallerSignal } from '../lib/abort.ts';
import type { AttemptRecord, CallRecord, Door } from '../metrics/calls.ts';
import type { Rule } from '../policies/rulebook.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import type { SessionTerms } from '../rotation/sessions.ts';
import type { UpstreamError } from '../upstream/types.ts';
import type { Settled } from './attempt.ts';
import type { FailedAttempt } from './call-error.ts';
import type { ProviderSessions } from './gateways.ts';
import type { InFlight, Run } from './in-flight.ts';
import type { RetryPolicy, RetryPolicyHolder } from './retry-policy.ts';
import type { Selector } from './selector.ts';
import type { Work } from './work.ts';

/** The shapes of one call through the executor (executor.ts), and the small rules they carry. */

export interface CallInput<R> {
  /** What each attempt does through its proxy (work.ts). */
  work: Work<R>;
  timeoutS: number;
  /** The session table's key (the client's id, with the host for a `scope: host` session). */
  sessionId?: string | undefined;
  /** The call's session as the prelude resolved it (policies and ROTA_SESSION_*), when it has one. */
  session?: CallSession | undefined;
  /** The policy rule that applies to the call (policies/); none: the global settings alone. */
  rule?: Rule | undefined;
  /** geo-targeted's preference. */
  country?: string | undefined;
  /** A hard filter: only proxies of this country (the listeners). */
  onlyCountry?: string | undefined;
  /** The target's host (bans/banHost): cool-downs of that host apply, and answers are judged for bans. */
  host?: string | undefined;
  /** The target's port: a proxy's refusal of host:port cools that pair down (bans/refusals.ts). */
  port?: number | undefined;
  signal?: CallerSignal;
  /** Where the call came in, and what it asked: for the request log only (CallRecord). */
  door?: Door | undefined;
  scheme?: 'http' | 'https' | undefined;
  path?: string | undefined;
}

export interface CallSession {
  /** The id the client gave. */
  readonly id: string;
  /** The target host of a `scope: host` session; null: one pin for every host. */
  readonly host: string | null;
  readonly terms: SessionTerms;
  /** `on_ban: keep`: a ban keeps the pin and its answer is the call's. */
  readonly keepOnBan: boolean;
}

export interface CallResult<R> {
  response: R;
  proxy: ProxyEntry;
  attempts: number;
  /** The call's CallRecord.id, for Executor.ended(). */
  callId?: number | undefined;
  /** The policy rule that applied (X-Rota-Policy), if any. */
  rule?: string | undefined;
  /** The session the client named (X-Rota-Session), if any. */
  session?: string | undefined;
}

export interface ExecutorDeps {
  selector: Selector;
  breakers: BreakerRegistry;
  retry: RetryPolicyHolder;
  monotonic: () => number;
  /** Wall clock, the breakers' time base (for Retry-After). */
  now: () => number;
  random: () => number;
  connectTimeoutMs: number;
  /** ROTA_HEDGE_DELAY_S in ms; 0 never asks a second proxy while the first may still answer. */
  hedgeDelayMs: number;
  onCall: (call: CallRecord) => void;
  /** A call's answer body or tunnel is over (Executor.ended): the request log's bytes and duration. */
  onCallEnd?: ((callId: number, up: number, down: number) => void) | undefined;
  /** An attempt that ended after its call was reported (a hedge overtook it): per-proxy numbers only. */
  onLateAttempt: (attempt: AttemptRecord) => void;
  /** Where a failure of that late bookkeeping is reported: it must never become an unhandled rejection. */
  onError: (err: unknown) => void;
  /** Ban detection (bans/judge.ts); none: answers are never judged. */
  bans?:
    | { judge(proxyId: string, host: string, answer: TargetAnswer, rule?: BanRule, cool?: boolean): boolean }
    | undefined;
  /** A rule's pace refused a call (429 HOST_RATE_LIMITED after min_interval_ms): per-rule metrics. */
  onPaceRefused?: ((rule: string) => void) | undefined;
  /** Provider sessions of gateways (gateways.ts): a ban moves a session's to the next. */
  providerSessions: ProviderSessions;
  /** Refusals of one target by one proxy (bans/refusals.ts); none: they cool nothing down. */
  refusals?:
    | { refused(proxyId: string, host: string, port: number, coolKey: string | null): void }
    | undefined;
}

/** What every step of one call needs. */
export interface Call<R> {
  readonly input: CallInput<R>;
  readonly policy: RetryPolicy;
  readonly deadline: number;
  readonly attempts: AttemptRecord[];
  readonly inflight: InFlight<Settled<R>>;
  readonly replayable: boolean;
  /** The attempt whose answer the caller got, once there is one. */
  winner: Run<Settled<R>> | null;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

export function replayable(work: Work<unknown>, policy: RetryPolicy): boolean {
  if (work.replay === 'always') return true;
  if (work.replay === 'never') return false;
  return SAFE_METHODS.has(work.method) || policy.retry_non_idempotent;
}

/** What one call has learned so far, across its attempts. */
export interface CallState<R> {
  readonly tried: Set<string>;
  readonly failed: FailedAttempt[];
  lastError: UpstreamError | null;
  /** The latest target answer and the index of its attempt record. */
  answer: { result: CallResult<R>; at: number } | null;
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
export function delivered<R>(answer: CallResult<R>, attempts: AttemptRecord[], at: number): CallResult<R> {
  const rec = attempts[at];
  if (rec && rec.outcome !== 'success') attempts[at] = { ...rec, outcome: 'success' };
  return answer;
}
