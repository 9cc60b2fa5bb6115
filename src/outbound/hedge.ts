import type { ProxyEntry } from '../pool/pool.ts';

/**
 * The time rules of attempts through proxies that have not proven themselves: how much of the deadline
 * one may take, and when the call may ask another proxy beside it.
 */

/**
 * Only read-only methods are hedged. An idempotent write (PUT, DELETE) may be replayed after a failure,
 * but a hedge sends it twice while the first copy still runs, and that copy, left to finish after the
 * caller has its answer, could land after the caller's next write.
 */
const HEDGE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A proxy that has answered before and not failed since: it gets the whole deadline, and no hedge. */
export function isProven(entry: ProxyEntry): boolean {
  return entry.stats.success > 0 && entry.consecutiveFailures === 0;
}

export interface HedgeInput {
  readonly method: string;
  readonly sessionId: string | undefined;
  readonly maxAttempts: number;
  readonly delayMs: number;
}

/**
 * When the call may ask another proxy too, if this attempt has not answered by then. Only a GET, HEAD
 * or OPTIONS call (HEDGE_METHODS), only through a proxy that has not proven itself (a proven one gets
 * the whole deadline: a slow target must not be answered twice), only while another attempt may
 * follow, and only before the attempt's own share of the deadline ends (then it fails over anyway).
 * Never for a call with a session id: a sticky session keeps its proxy until that proxy fails, and
 * a hedge would re-pin it.
 */
export function hedgeTime(
  h: HedgeInput,
  entry: ProxyEntry,
  n: number,
  slice: number,
  now: number,
): number | null {
  if (!HEDGE_METHODS.has(h.method) || h.delayMs <= 0 || n >= h.maxAttempts) return null;
  if (isProven(entry) || h.sessionId) return null;
  return now + h.delayMs < slice ? now + h.delayMs : null;
}

/**
 * A proxy that accepts the connection and never answers looks, in absolute-URI form, exactly like a slow
 * target: only time tells them apart. So that such a proxy cannot eat the whole deadline, an attempt
 * through a proxy that has not proven itself (no success yet, or failing lately) gets an equal share of
 * what is left (never less than two connect timeouts) when it can still fail over. A proven proxy gets
 * the whole deadline: a slow target must not be cut short and blamed on a proxy that works.
 */
export function attemptDeadline(
  entry: ProxyEntry,
  deadline: number,
  attemptsLeft: number,
  now: number,
  connectTimeoutMs: number,
): number {
  if (attemptsLeft <= 1 || isProven(entry)) return deadline;
  const share = Math.max((deadline - now) / attemptsLeft, 2 * connectTimeoutMs);
  return Math.min(deadline, now + share);
}
