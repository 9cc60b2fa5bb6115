import type { RotaError } from '../errors/rota-error.ts';
import { delay } from '../lib/abort.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import type { Call, CallState, ExecutorDeps } from './call.ts';
import { callError, hostRateLimited, poolEmptyError } from './call-error.ts';
import type { Selection } from './eligibility.ts';
import { isGateway } from './gateways.ts';
import { backoffSeconds } from './retry-policy.ts';

/**
 * The executor's steps that wait or decide on their own (executor.ts keeps the loop): the selection a
 * call asks for, the waits (a free slot, a rule's pace, the back-off before a retry), what a ban leads
 * to, and the 503 when nobody could serve.
 */

/** `again`: pick again; `none`: no further attempt now. */
type Step = 'again' | 'none';

export function selection<R>(c: Call<R>, s: CallState<R>): Selection {
  const { sessionId, country, onlyCountry, host, port, rule, session } = c.input;
  // The first pick of a call may fall back to the pair whose cool-down ends first; a retry may not
  // (with no proxy free of a cool-down left, the caller gets the site's answer).
  const coolingFallback = s.tried.size === 0;
  if (rule === undefined && session === undefined) {
    return { exclude: s.tried, sessionId, country, onlyCountry, host, port, coolingFallback };
  }
  const terms = session?.terms;
  const keepOnBan = session?.keepOnBan;
  return {
    exclude: s.tried,
    sessionId,
    country,
    onlyCountry,
    host,
    port,
    coolingFallback,
    rule,
    terms,
    keepOnBan,
  };
}

/** Every proxy that could serve is at ROTA_PROXY_MAX_IN_FLIGHT: wait for a slot within the deadline. */
export async function waitForSlot<R>(d: ExecutorDeps, c: Call<R>, s: CallState<R>): Promise<Step> {
  const left = c.deadline - d.monotonic();
  if (await d.selector.waitForSlot(left, c.input.signal)) return 'again';
  if (s.answer) return 'none';
  throw callError(s.lastError, s.failed, true);
}

/** A rule's min_interval_ms holds every proxy back from the host: wait `ms` for the first, or 429. */
export async function waitForPace<R>(
  d: ExecutorDeps,
  c: Call<R>,
  s: CallState<R>,
  ms: number,
): Promise<Step> {
  const left = c.deadline - d.monotonic();
  if (ms >= left) {
    if (s.answer) return 'none';
    const rule = c.input.rule?.name ?? '';
    d.onPaceRefused?.(rule);
    throw hostRateLimited(rule, ms, 'min_interval_ms');
  }
  return (await delay(ms, c.input.signal)) ? 'again' : 'none';
}

/**
 * The wait before asking the target again. Only when another attempt can follow (never after the
 * last proxy), and before the pick, so that what is picked is still in the pool once it is over.
 * False when no further attempt is worth making: no proxy left, no time left, or the caller gone.
 */
export async function waitBeforeRetry<R>(
  d: ExecutorDeps,
  c: Call<R>,
  s: CallState<R>,
  nextAttempt: number,
): Promise<boolean> {
  s.pause = false;
  if (!d.selector.hasCandidate(selection(c, s))) return false;
  const ms = backoffSeconds(c.policy, nextAttempt, d.random) * 1000;
  // A wait that reaches the deadline leaves no time to ask again: the caller is better served now.
  if (ms >= c.deadline - d.monotonic()) return false;
  // False: the caller went away during the wait.
  return ms > 0 ? delay(ms, c.input.signal) : true;
}

/**
 * After a ban: another exit, or the ban as the answer (`on_ban: keep`, or a request that cannot be sent
 * again). A gateway's next exit is its next provider session, so it may be picked again.
 */
export function afterBan<R>(
  d: ExecutorDeps,
  c: Call<R>,
  s: CallState<R>,
  entry: ProxyEntry,
): 'next' | 'stop' {
  if (c.input.session?.keepOnBan === true) return 'stop';
  // A gateway's banned exit is its provider session's: the session's next attempt, in this call or the
  // next one (a call that cannot be sent again stops here), takes the next provider session.
  if (isGateway(entry.record)) d.providerSessions.bump(c.input.sessionId, entry.record.id);
  if (!c.replayable) return 'stop';
  if (isGateway(entry.record)) s.tried.delete(entry.record.id);
  return 'next';
}

/** 503 PROXY_POOL_EMPTY; with a country filter, about that country's proxies only; or the rule's. */
export function poolEmpty(d: ExecutorDeps, country: string | undefined, rule: string | undefined): RotaError {
  const now = d.now();
  if (rule !== undefined && country === undefined && d.selector.anyAdmissible()) {
    return poolEmptyError(null, now, `No proxy the policy rule ${rule} allows can serve the request now`);
  }
  if (country === undefined) return poolEmptyError(d.breakers.earliestHalfOpenAt(), now);
  const ids = d.selector.idsOfCountry(country);
  if (ids.length === 0) return poolEmptyError(null, now, `No proxy of country ${country}`);
  return poolEmptyError(d.breakers.earliestHalfOpenAt(ids), now);
}
