import type { ProxyEntry } from '../pool/pool.ts';
import type { Usable } from './shared.ts';
import type { AttemptOutcome } from './types.ts';

export const DEFAULT_SESSION_TTL_MS = 10 * 60_000;
/** Sessions kept at most; past it the least recently used are forgotten first. */
export const MAX_SESSIONS = 100_000;

/** How long a pin holds and when it moves (a policy rule's `session`, else ROTA_SESSION_*). */
export interface SessionTerms {
  /** Forgotten after this long unused. */
  readonly idleMs: number;
  /** Pinned anew this long after it was pinned, however busy; 0: never. */
  readonly maxMs: number;
  /** Pinned anew after this many picks; 0: never. */
  readonly maxRequests: number;
}

interface Pin {
  readonly entry: ProxyEntry;
  readonly createdAt: number;
  readonly lastUsed: number;
  /** When an idle sweep may drop it: its last use plus the idle time of the terms it was used under. */
  readonly expiresAt: number;
  readonly requests: number;
  /** The proxy's fault count when pinned: a newer fault means the pin no longer holds. */
  readonly faultGen: number;
}

/** One session as the API lists it. */
export interface SessionView {
  readonly id: string;
  /** The target host of a `scope: host` pin; null: every host. */
  readonly host: string | null;
  readonly proxyId: string;
  readonly createdAt: number;
  readonly lastUsed: number;
  readonly requests: number;
}

export interface SessionDeps {
  readonly now: () => number;
  readonly sessionTtlMs?: number | undefined;
  /** Terms of a pick that names none; absent: idle ROTA default, no max age, no max requests. */
  readonly defaults?: SessionTerms | undefined;
}

/** The table's key of a session for one host (`scope: host`); a session for every host is keyed by its id. */
export function hostKey(id: string, host: string): string {
  return `${id}\n${host}`;
}

function splitKey(key: string): { id: string; host: string | null } {
  const i = key.indexOf('\n');
  return i === -1 ? { id: key, host: null } : { id: key.slice(0, i), host: key.slice(i + 1) };
}

/**
 * Keeps each session on one proxy, whatever the strategy (docs/decisions.md, "Rotation and sessions": one
 * id means one proxy on every path, `POST request` and the listeners alike). The strategy makes the first
 * pick; the table holds it. The idle time is extended by every use, so a busy session keeps its exit
 * address and an idle one is forgotten. A session moves to another usable proxy when its proxy failed (a
 * proxy-fault outcome), is not usable now (breaker, exclusion, a ban unless `keep` allows it), left the
 * pool, or when the terms say it has served long enough (max age, max requests: rotate every N).
 */
/**
 * Why a session left its proxy: its term was served, its proxy failed (a fault counted against the proxy,
 * which every session pinned to it sees) or left the pool, or the session was ended.
 */
export type Release = 'term' | 'fault' | 'ended';

export class SessionTable {
  private readonly now: () => number;
  private readonly defaults: SessionTerms;
  /** Map order is least recently used first, because every use re-inserts its pin. */
  private readonly sessions = new Map<string, Pin>();
  private readonly faults = new WeakMap<ProxyEntry, number>();
  private readonly gone = new WeakSet<ProxyEntry>();
  /** Told of every pin made here (shared state tells the other instances). */
  onPin: ((key: string, entry: ProxyEntry, idleMs: number) => void) | null = null;
  /** Told when sessions were ended here by id (shared state tells the other instances). */
  onEnd: ((id: string) => void) | null = null;
  /**
   * Told when a live session leaves its proxy (its term served, its proxy failed or left the pool) or is
   * ended here, with the proxy it had: a gateway's provider session moves on with it
   * (outbound/gateways.ts), or the session would get its old exit back from the same gateway.
   */
  onRelease: ((key: string, had: ProxyEntry, why: Release) => void) | null = null;

  constructor(deps: SessionDeps) {
    this.now = deps.now;
    this.defaults = deps.defaults ?? {
      idleMs: deps.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS,
      maxMs: 0,
      maxRequests: 0,
    };
  }

  get size(): number {
    return this.sessions.size;
  }

  /**
   * The proxy of session `key`: its pin when that may serve now (`ok`, or `keep` for a pin kept through a
   * ban), otherwise `fresh` (the strategy's pick among the usable members it is given), pinned instead.
   */
  select(
    key: string,
    ok: Usable,
    fresh: (ok: Usable) => ProxyEntry | null,
    terms: SessionTerms = this.defaults,
    keep?: Usable,
  ): ProxyEntry | null {
    const now = this.now();
    this.expire(now);
    const pin = this.sessions.get(key);
    this.sessions.delete(key);
    if (pin !== undefined && now - pin.lastUsed < terms.idleMs) {
      const served = this.servedOut(pin, terms, now);
      if (!served && this.holds(pin) && (ok(pin.entry) || keep?.(pin.entry) === true)) {
        this.place(key, { ...pin, lastUsed: now, expiresAt: now + terms.idleMs, requests: pin.requests + 1 });
        return pin.entry;
      }
      // Its term is over or its proxy failed: the session leaves it (a proxy only unusable for now, at its
      // cap or cooling or left out by this call's retries, is not left: the session may come back to it).
      if (served || !this.holds(pin)) this.onRelease?.(key, pin.entry, served ? 'term' : 'fault');
      // After a failure or a full term, prefer any other proxy; the old one only when it is the last one.
      if (served || this.faulted(pin)) return this.repin(key, ok, fresh, terms, pin.entry, now);
    }
    return this.repin(key, ok, fresh, terms, null, now);
  }

  /** The proxy session `key` is pinned to and would keep (live, not faulted, term not over); no side effect. */
  peek(key: string, terms: SessionTerms = this.defaults): ProxyEntry | null {
    const pin = this.sessions.get(key);
    const now = this.now();
    if (pin === undefined || now - pin.lastUsed >= terms.idleMs) return null;
    return this.servedOut(pin, terms, now) || !this.holds(pin) ? null : pin.entry;
  }

  private repin(
    key: string,
    ok: Usable,
    fresh: (ok: Usable) => ProxyEntry | null,
    terms: SessionTerms,
    avoid: ProxyEntry | null,
    now: number,
  ): ProxyEntry | null {
    const next =
      (avoid === null ? fresh(ok) : fresh((e) => e !== avoid && ok(e))) ??
      (avoid !== null && !this.gone.has(avoid) && ok(avoid) ? avoid : null);
    if (next === null) return null;
    this.place(key, this.newPin(next, now, terms.idleMs));
    this.onPin?.(key, next, terms.idleMs);
    return next;
  }

  private servedOut(pin: Pin, terms: SessionTerms, now: number): boolean {
    if (terms.maxMs > 0 && now - pin.createdAt >= terms.maxMs) return true;
    return terms.maxRequests > 0 && pin.requests >= terms.maxRequests;
  }

  private holds(pin: Pin): boolean {
    return !this.gone.has(pin.entry) && !this.faulted(pin);
  }

  record(e: ProxyEntry, outcome: AttemptOutcome): void {
    if (!outcome.ok && outcome.proxyFault) this.faults.set(e, (this.faults.get(e) ?? 0) + 1);
  }

  removed(e: ProxyEntry): void {
    this.gone.add(e);
  }

  private faulted(pin: Pin): boolean {
    return (this.faults.get(pin.entry) ?? 0) !== pin.faultGen;
  }

  /** Another instance pinned session `key` (shared state): the same pin here, not told again. */
  applyRemote(key: string, entry: ProxyEntry, idleMs = this.defaults.idleMs): void {
    this.sessions.delete(key);
    this.place(key, this.newPin(entry, this.now(), idleMs));
  }

  /** The live sessions, most recently used first. */
  list(): SessionView[] {
    const now = this.now();
    const out: SessionView[] = [];
    for (const [key, pin] of this.sessions) {
      if (pin.expiresAt <= now || this.gone.has(pin.entry)) continue;
      const { id, host } = splitKey(key);
      const { createdAt, lastUsed, requests } = pin;
      out.push({ id, host, proxyId: pin.entry.record.id, createdAt, lastUsed, requests });
    }
    return out.reverse();
  }

  /** Ends every pin of session `id` (any host); how many there were. Told to `onEnd` unless remote. */
  end(id: string, remote = false): number {
    let n = 0;
    const prefix = `${id}\n`;
    for (const [key, pin] of [...this.sessions]) {
      if (key === id || key.startsWith(prefix)) {
        this.sessions.delete(key);
        if (!remote) this.onRelease?.(key, pin.entry, 'ended');
        n++;
      }
    }
    if (n > 0 && !remote) this.onEnd?.(id);
    return n;
  }

  private newPin(entry: ProxyEntry, now: number, idleMs: number): Pin {
    const faultGen = this.faults.get(entry) ?? 0;
    return { entry, createdAt: now, lastUsed: now, expiresAt: now + idleMs, requests: 1, faultGen };
  }

  private place(key: string, pin: Pin): void {
    this.sessions.set(key, pin);
    if (this.sessions.size > MAX_SESSIONS) {
      const oldest = this.sessions.keys().next();
      if (!oldest.done) this.sessions.delete(oldest.value);
    }
  }

  /**
   * Idle sessions sit at the front of the map: drop them from there until one is still live. (Terms
   * differ by rule, so a shorter-lived pin may sit behind a live one: select() checks each pin's own age.)
   */
  private expire(now: number): void {
    for (const [id, pin] of this.sessions) {
      if (pin.expiresAt > now) return;
      this.sessions.delete(id);
    }
  }
}
