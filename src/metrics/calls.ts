/**
 * What the engine reports after each outbound call (`POST request`). One record per call, emitted once the
 * call is over, so every aggregator sees the same facts and their numbers agree with each other.
 */

/**
 * - `success`: this attempt produced the answer returned to the caller (whatever its status code: a 404
 *   from the site is still a delivered answer). An attempt a hedge overtook (ROTA_HEDGE_DELAY_S) is not
 *   in its call's record; it is reported on its own when it ends (per-proxy numbers only).
 * - `target_error`: the proxy worked but the target failed (retryable status, unreachable, TLS); it does
 *   not count against the proxy.
 * - `proxy_error`: a proxy fault (connect, handshake, 407, refused CONNECT...).
 * - `timeout`: the deadline was reached before the target answered.
 */
export type AttemptOutcome = 'success' | 'target_error' | 'proxy_error' | 'timeout';

export const ATTEMPT_OUTCOMES: readonly AttemptOutcome[] = [
  'success',
  'target_error',
  'proxy_error',
  'timeout',
];

export interface AttemptRecord {
  readonly proxyId: string;
  /** 1-based position within the call; attempts after the first are retries. */
  readonly attempt: number;
  readonly outcome: AttemptOutcome;
  readonly latencyMs: number;
  /** The UpstreamError kind when the attempt failed, for logs and debugging; `banned` for a ban. */
  readonly kind?: string;
  /** The target's status code, when the attempt got an HTTP answer. */
  readonly status?: number;
}

/** Where a call came in: POST request, the HTTP listener (absolute-URI, CONNECT), SOCKS5, an inspected request. */
export type Door = 'api' | 'http' | 'connect' | 'socks5' | 'inspect';

export const DOORS: readonly Door[] = ['api', 'http', 'connect', 'socks5', 'inspect'];

export interface CallRecord {
  /** True when the caller got a proxied answer (the 200 envelope). */
  readonly ok: boolean;
  /** Whole call, retries and backoff included. */
  readonly latencyMs: number;
  /** Empty when the call failed before any proxy was tried (e.g. PROXY_POOL_EMPTY). */
  readonly attempts: readonly AttemptRecord[];
  /** The error code returned to the caller when `ok` is false (e.g. PROXY_FAILOVER_EXHAUSTED). */
  readonly errorCode?: string;
  /** The attempt whose answer the caller got, when the engine knows it (hedged attempts run side by side). */
  readonly deliveredAttempt?: number;
  /**
   * What the call asked, for the request log (src/requestlog/): set by the engine from its CallInput;
   * absent where a record is made by hand (tests). `id` names the call to Executor.ended().
   */
  readonly id?: number;
  readonly door?: Door | undefined;
  readonly method?: string;
  /** `http` or `https` for a request; none for a tunnel. */
  readonly scheme?: 'http' | 'https' | undefined;
  /** The target's host (bans/banHost) and port. */
  readonly host?: string | undefined;
  readonly port?: number | undefined;
  /** The request's path as the door received it (its query is cut by the log, never shown). */
  readonly path?: string | undefined;
  readonly sessionId?: string | undefined;
  /** The policy rule that matched, by name. */
  readonly rule?: string | undefined;
}

/**
 * A failure of the proxy itself (it failed, or did not get through in time): what a proxy's failures
 * count. A ban (kind `banned`) or the target's own failure is not one: bans are counted apart.
 */
export function ownFault(a: AttemptRecord): boolean {
  return a.outcome === 'proxy_error' || a.outcome === 'timeout';
}

/** Attempts after the first: the definition of a retry (docs/decisions.md, "Monitoring"). */
export function retriesOf(call: CallRecord): number {
  let n = 0;
  for (const a of call.attempts) if (a.attempt > 1) n++;
  return n;
}

/**
 * The attempt number on which a successful call succeeded, or null for a failed call. Falls back to the
 * number of attempts when the engine marked the call ok without a `success` attempt (defensive).
 */
export function successfulAttempt(call: CallRecord): number | null {
  if (!call.ok) return null;
  if (call.deliveredAttempt !== undefined) return call.deliveredAttempt;
  for (let i = call.attempts.length - 1; i >= 0; i--) {
    const a = call.attempts[i]!;
    if (a.outcome === 'success') return a.attempt;
  }
  return Math.max(1, call.attempts.length);
}

/** Latency values from outside are clamped so that one bad clock reading cannot poison an average. */
export function safeMs(ms: number): number {
  return Number.isFinite(ms) && ms > 0 ? ms : 0;
}
