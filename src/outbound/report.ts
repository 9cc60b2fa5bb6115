import type { AttemptRecord, CallRecord } from '../metrics/calls.ts';
import type { Settled } from './attempt.ts';
import type { CallInput } from './call.ts';
import type { InFlight, Run } from './in-flight.ts';

/**
 * The bookkeeping at the end of a call, apart from its loop (executor.ts): what the call was, for the
 * aggregators, and what becomes of the attempts still running when the caller got its answer.
 */

export interface ReportDeps {
  readonly onCall: (call: CallRecord) => void;
  readonly onLateAttempt: (attempt: AttemptRecord) => void;
  readonly onError: (err: unknown) => void;
}

export interface Reported<R> {
  readonly input: CallInput<R>;
  readonly attempts: AttemptRecord[];
  readonly inflight: InFlight<Settled<R>>;
  readonly winner: Run<Settled<R>> | null;
}

let lastCallId = 0;

/**
 * The record of call `c` as the caller sees it: the engine's facts and what the door asked (for the
 * request log). Strings are the input's own, none built here.
 */
export function callRecord<R>(
  c: Reported<R>,
  ok: boolean,
  latencyMs: number,
  errorCode?: string,
): CallRecord {
  const i = c.input;
  return {
    id: ++lastCallId,
    ok,
    latencyMs,
    attempts: c.attempts,
    errorCode,
    deliveredAttempt: c.winner?.n,
    door: i.door,
    method: i.work.method,
    scheme: i.scheme,
    host: i.host,
    port: i.port,
    path: i.path,
    sessionId: i.session?.id ?? i.sessionId,
    rule: i.rule?.name,
  };
}

/**
 * Reports the call now, as the caller sees it. Attempts that the answering one overtook (their proxy
 * stayed silent while one asked later answered) run on to the end of their own share of the deadline,
 * so that a proxy that never answers still fails its attempts and opens its breaker; each is reported
 * on its own when it ends. Any other attempt still running is cancelled without blame. An answer that
 * does not reach the caller is handed back to its Work to be freed.
 */
export function reportCall<R>(d: ReportDeps, c: Reported<R>, delivered: CallRecord): void {
  const winner = c.winner;
  if (c.inflight.size === 0) {
    d.onCall(delivered);
    return;
  }
  const free = (s: Settled<R>) => {
    if (s.result.type === 'response') c.input.work.discard(s.result.response);
  };
  void c.inflight
    .release(winner, free)
    .then((behind) => {
      // The overtaken attempts add their records to c.attempts later: the call keeps what it had.
      d.onCall({ ...delivered, attempts: c.attempts.slice() });
      for (const r of behind) {
        void r.done
          .then((settled) => {
            free(settled);
            const late = c.attempts[settled.recordAt];
            if (late) d.onLateAttempt(late);
          })
          .catch(d.onError);
      }
    })
    .catch(d.onError);
}
