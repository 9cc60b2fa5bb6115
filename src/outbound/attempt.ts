import type { TargetAnswer } from '../bans/detect.ts';
import type { BanRule } from '../bans/judge.ts';
import type { Permit } from '../breaker/types.ts';
import type { CallerSignal } from '../lib/abort.ts';
import type { AttemptRecord } from '../metrics/calls.ts';
import { recordAttempt, recordBanned } from '../pool/health.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import type { ProxyRecord } from '../pool/types.ts';
import { UpstreamError } from '../upstream/types.ts';
import type { Selector } from './selector.ts';
import type { Work } from './work.ts';

/**
 * One attempt of a call through one proxy, and what everything learns from it.
 *
 *   Permit ──▶ Work.run() through the proxy ──▶ result ──▶ breaker, health, strategy, attempt record
 */

/** `banned`: the target refused this proxy's address (bans/); the pair is cooling down already. */
export type AttemptResult<R> =
  | { type: 'response'; response: R; retryable: boolean; banned: boolean; status: number | undefined }
  | { type: 'error'; error: UpstreamError };

/** An attempt's result, and where its record went in the call's attempt records (-1: not recorded). */
export interface Settled<R> {
  result: AttemptResult<R>;
  recordAt: number;
}

export interface AttemptDeps {
  readonly selector: Selector;
  readonly monotonic: () => number;
  /** Ban detection: true when the answer banned the proxy for `host`. */
  readonly bans?:
    | { judge(proxyId: string, host: string, answer: TargetAnswer, rule?: BanRule, cool?: boolean): boolean }
    | undefined;
  /** Refusals of one target by one proxy: the pair cools down (bans/refusals.ts). */
  readonly refusals?:
    | { refused(proxyId: string, host: string, port: number, coolKey: string | null): void }
    | undefined;
}

export interface AttemptInput<R> {
  readonly entry: ProxyEntry;
  /** What to dial with (a gateway's: this attempt's rendered credentials, outbound/gateways.ts). */
  readonly record: ProxyRecord;
  /** The proxy a ban of this attempt cools down: the entry's id, or a gateway's `id#provider session`. */
  readonly banKey: string | null;
  readonly permit: Permit;
  /** 1-based attempt number within the call. */
  readonly n: number;
  readonly work: Work<R>;
  /** The target's host, for bans; undefined when there is none to judge. */
  readonly host: string | undefined;
  /** The target's port, for refusals of host:port; undefined when there is none. */
  readonly port?: number | undefined;
  /** The call's policy rule: its ban fields over the ban policy, its name on the ban's report. */
  readonly rule?: BanRule | undefined;
  readonly deadline: number;
  readonly signal?: CallerSignal | undefined;
  readonly onResponseStart?: (() => void) | undefined;
  readonly retryStatusCodes: readonly number[];
  /** The call's records: this attempt's is appended when it ends. */
  readonly attempts: AttemptRecord[];
}

/**
 * Runs the attempt; never rejects. Written with then() rather than as an async function: one frame less
 * on every call's path (with the other cuts made with it, ~1 KB less allocated per absolute-URI
 * GET; no change in CPU per call that a paired run, bench/pair.ts, could see).
 */
export function runAttempt<R>(d: AttemptDeps, a: AttemptInput<R>): Promise<Settled<R>> {
  const t0 = d.monotonic();
  d.selector.inFlight(a.entry, 1);
  let running: Promise<R>;
  try {
    running = a.work.run(a);
  } catch (err) {
    running = Promise.reject(err);
  }
  const end = (result: AttemptResult<R>): Settled<R> => {
    d.selector.inFlight(a.entry, -1);
    return { result, recordAt: settle(d, a, result, d.monotonic() - t0) };
  };
  return running.then(
    (response) => {
      let result: AttemptResult<R>;
      try {
        result = answered(d, a, response);
      } catch (err) {
        result = failed(err);
      }
      return end(result);
    },
    (err: unknown) => end(failed(err)),
  );
}

/** What the target's answer says: the retry policy's statuses, and bans. */
function answered<R>(d: AttemptDeps, a: AttemptInput<R>, response: R): AttemptResult<R> {
  const answer = a.work.answer(response);
  const banned =
    answer !== null &&
    a.host !== undefined &&
    d.bans?.judge(a.banKey ?? a.entry.record.id, a.host, answer, a.rule, a.banKey !== null) === true;
  const retryable = answer !== null && a.retryStatusCodes.includes(answer.status);
  return { type: 'response', response, retryable, banned, status: answer?.status };
}

/**
 * Anything a Work throws that is not an UpstreamError is Rota's own failure (a bug, a stored credential
 * that cannot be decrypted): `local`, which blames no proxy. It may have happened after the request
 * left, so it is not taken as safe to replay.
 */
function failed(err: unknown): AttemptResult<never> {
  const error =
    err instanceof UpstreamError
      ? err
      : new UpstreamError('local', 'internal error during the attempt', {
          mayHaveReachedTarget: true,
          cause: err,
        });
  return { type: 'error', error };
}

function outcomeOf<R>(r: AttemptResult<R>, proxyFault: boolean): AttemptRecord['outcome'] {
  if (r.type === 'response') return r.retryable || r.banned ? 'target_error' : 'success';
  if (r.error.kind === 'timeout' || r.error.kind === 'queue_timeout') return 'timeout';
  return proxyFault ? 'proxy_error' : 'target_error';
}

/**
 * Breaker, health, strategy and metrics learn the outcome; the permit is released whatever happened.
 * Returns where the attempt's record went in `attempts`, or -1 when it was not recorded.
 */
function settle<R>(d: AttemptDeps, a: AttemptInput<R>, r: AttemptResult<R>, latencyMs: number): number {
  const blame = blameOf(r);
  a.permit.release(blame === 'proxy' ? 'failure' : blame === 'none' ? 'success' : 'neutral');
  if (r.type === 'error' && r.error.kind === 'aborted') return -1;
  const proxyFault = blame === 'proxy';
  if (blame === 'pair' && a.host !== undefined && a.port !== undefined) {
    // A gateway's refusal is its provider session's (banKey), as its bans are; a proxy's is its own.
    d.refusals?.refused(a.entry.record.id, a.host, a.port, a.banKey);
  }
  if (blame === 'proxy' || blame === 'none') recordAttempt(a.entry, !proxyFault, proxyFault, latencyMs);
  else if (blame !== 'nobody') recordBanned(a.entry, latencyMs);
  const ok = r.type === 'response' && !r.retryable && !r.banned;
  if (blame !== 'nobody') d.selector.record(a.entry, { ok, latencyMs, proxyFault });
  const kind = r.type === 'error' ? r.error.kind : r.banned ? 'banned' : undefined;
  const outcome = outcomeOf(r, proxyFault);
  const status = r.type === 'response' ? r.status : undefined;
  // No `kind` key at all on a plain success (not one set to undefined); no spread of a temporary object.
  const record: AttemptRecord =
    kind === undefined
      ? { proxyId: a.entry.record.id, attempt: a.n, outcome, latencyMs, status }
      : { proxyId: a.entry.record.id, attempt: a.n, outcome, latencyMs, kind, status };
  a.attempts.push(record);
  return a.attempts.length - 1;
}

/**
 * Whom the attempt's result is held against:
 * - `proxy`: a proxy fault (breaker failure, health down);
 * - `none`: the proxy did its work (a target's answer or its own failure): breaker success, health up;
 * - `pair`: the proxy refused or could not reach this target: the pair cools down, breaker and health
 *   untouched (bans/refusals.ts);
 * - `ban`: the site refused this proxy's address: the pair is cooling down already (bans/judge.ts);
 * - `nobody`: the caller left, or Rota failed on its own (`local`): nothing learns anything.
 */
type Blame = 'proxy' | 'none' | 'pair' | 'ban' | 'nobody';

function blameOf<R>(r: AttemptResult<R>): Blame {
  if (r.type === 'response') return r.banned ? 'ban' : 'none';
  const e = r.error;
  if (e.kind === 'aborted' || e.kind === 'local') return 'nobody';
  if (e.proxyFault) return 'proxy';
  return e.pairFault ? 'pair' : 'none';
}
