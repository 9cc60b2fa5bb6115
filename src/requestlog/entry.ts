import { ERRORS } from '../errors/codes.ts';
import type { AttemptRecord, CallRecord, Door } from '../metrics/calls.ts';

/**
 * One call of the request log as read: the engine's CallRecord (rebuilt from the ring's columns,
 * columns.ts) and what its door told at the end (bytes each way). Everything shown is derived from it
 * when read; the record's JSON is built only when someone asks for it (view.ts).
 */

/**
 * - `success`: the caller got the target's answer (any status but a ban);
 * - `banned`: the answer the caller got was a ban (every proxy tried was refused);
 * - `timeout`: the deadline passed first; `no_proxy`: no proxy could serve (PROXY_POOL_EMPTY);
 * - `error`: any other failure (proxies failed, the target unreachable, its certificate refused...).
 */
export type CallOutcome = 'success' | 'banned' | 'timeout' | 'no_proxy' | 'error';

export const CALL_OUTCOMES: readonly CallOutcome[] = ['success', 'banned', 'timeout', 'no_proxy', 'error'];

/** The longest path kept; what is past it is cut (and marked with `…`). */
export const MAX_PATH = 512;

export class LogEntry {
  readonly call: CallRecord;
  /** Epoch ms at which the call began (its report time less its latency). */
  readonly at: number;
  /** The request's path without its query; null for a tunnel. */
  readonly path: string | null;
  /** Bytes client to target and back; set by end(). */
  up = 0;
  down = 0;
  /** Ms from the call's start to its end (body or tunnel over); null while it goes on. */
  durationMs: number | null = null;
  /**
   * Its place in the order finished calls were told (1, 2, …; 0 while it goes on): the live stream's
   * event id, which a reconnection's Last-Event-ID names (calls end in another order than they begin).
   */
  told = 0;

  constructor(call: CallRecord, at: number) {
    this.call = call;
    this.at = at;
    this.path = pathOnly(call.path);
  }

  /** Still streaming its answer or carrying a tunnel. */
  get open(): boolean {
    return this.call.ok && this.durationMs === null;
  }

  end(up: number, down: number, now: number): void {
    this.up = up;
    this.down = down;
    this.durationMs = Math.max(0, now - this.at);
  }

  get door(): Door | undefined {
    return this.call.door;
  }

  get host(): string | undefined {
    return this.call.host;
  }

  /** The attempt whose answer the caller got, if any. */
  delivered(): AttemptRecord | undefined {
    return deliveredOf(this.call);
  }

  outcome(): CallOutcome {
    return outcomeOf(this.call);
  }

  /** The status the client got: the target's, or Rota's own error status; null for an open tunnel. */
  status(): number | null {
    const c = this.call;
    if (c.ok) return this.delivered()?.status ?? null;
    const spec = (ERRORS as Record<string, { status: number } | undefined>)[c.errorCode ?? ''];
    return spec?.status ?? ERRORS.INTERNAL_ERROR.status;
  }

  banSeen(): boolean {
    return banSeenOf(this.call);
  }

  /** Whether any attempt went through `proxyId`. */
  usedProxy(proxyId: string): boolean {
    for (const a of this.call.attempts) if (a.proxyId === proxyId) return true;
    return false;
  }

  /** The proxy whose answer (or tunnel) the caller got, if any. */
  proxyId(): string | null {
    return this.delivered()?.proxyId ?? null;
  }
}

/** The attempt of `c` whose answer the caller got, if any. */
export function deliveredOf(c: CallRecord): AttemptRecord | undefined {
  if (!c.ok) return undefined;
  const n = c.deliveredAttempt;
  for (let i = c.attempts.length - 1; i >= 0; i--) {
    const a = c.attempts[i]!;
    if (n === undefined ? a.outcome === 'success' : a.attempt === n) return a;
  }
  return undefined;
}

export function outcomeOf(c: CallRecord): CallOutcome {
  if (c.ok) return deliveredOf(c)?.kind === 'banned' ? 'banned' : 'success';
  if (c.errorCode === 'PROXY_POOL_EMPTY') return 'no_proxy';
  if (c.errorCode === 'REQUEST_TIMEOUT') return 'timeout';
  return 'error';
}

export function banSeenOf(c: CallRecord): boolean {
  for (const a of c.attempts) if (a.kind === 'banned') return true;
  return false;
}

/** `p` without its query (and fragment), at most MAX_PATH characters; null when there is none. */
export function pathOnly(p: string | undefined): string | null {
  if (p === undefined) return null;
  let end = p.length;
  const q = p.indexOf('?');
  if (q !== -1) end = q;
  const h = p.indexOf('#');
  if (h !== -1 && h < end) end = h;
  if (end > MAX_PATH) return detached(`${p.slice(0, MAX_PATH - 1)}…`);
  return end === p.length ? p : detached(p.slice(0, end));
}

/**
 * A copy of `s` that holds nothing of the string it was cut from. V8 keeps a cut of 13 characters or more
 * as a view into its parent, so a path cut from a request target would keep the whole target in the
 * ring, query string included (10,000 records of a 15,000-character query held 151 MB): a string built
 * anew and cut again is a view into the copy only. (requestlog/log.test.ts measures it.)
 */
function detached(s: string): string {
  return ` ${s}`.slice(1);
}
