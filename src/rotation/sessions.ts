import type { ProxyEntry } from '../pool/pool.ts';
import type { Usable } from './shared.ts';
import type { AttemptOutcome } from './types.ts';

export const DEFAULT_SESSION_TTL_MS = 10 * 60_000;
/** Sessions kept at most; past it the least recently used are forgotten first. */
export const MAX_SESSIONS = 100_000;

interface Pin {
  readonly entry: ProxyEntry;
  readonly expiresAt: number;
  /** The proxy's fault count when pinned: a newer fault means the pin no longer holds. */
  readonly faultGen: number;
}

export interface SessionDeps {
  readonly now: () => number;
  readonly sessionTtlMs?: number | undefined;
}

/**
 * Keeps each session id on one proxy, whatever the strategy (docs/decisions.md, "Rotation and sessions": one
 * id means one proxy on every path, `POST request` and the listeners alike). The strategy makes the first
 * pick; the table holds it. The TTL is an idle timeout: every use extends it, so a busy session keeps its
 * exit address and an idle one is forgotten. A session moves to another usable proxy when its proxy failed (a
 * proxy-fault outcome), is not usable now (breaker, exclusion), or left the pool.
 */
export class SessionTable {
  private readonly now: () => number;
  private readonly ttlMs: number;
  /** Map order is least recently used first, because every use re-inserts its pin. */
  private readonly sessions = new Map<string, Pin>();
  private readonly faults = new WeakMap<ProxyEntry, number>();
  private readonly gone = new WeakSet<ProxyEntry>();
  /** Told of every pin made here (shared state tells the other instances). */
  onPin: ((id: string, entry: ProxyEntry) => void) | null = null;

  constructor(deps: SessionDeps) {
    this.now = deps.now;
    this.ttlMs = deps.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS;
  }

  get size(): number {
    return this.sessions.size;
  }

  /**
   * The proxy of session `id`: its pin when that may serve now, otherwise `fresh` (the strategy's pick
   * among the usable members it is given), pinned in its place.
   */
  select(id: string, ok: Usable, fresh: (ok: Usable) => ProxyEntry | null): ProxyEntry | null {
    const now = this.now();
    this.expire(now);
    const pin = this.sessions.get(id);
    this.sessions.delete(id);
    if (pin !== undefined && !this.gone.has(pin.entry) && ok(pin.entry) && !this.faulted(pin)) {
      this.place(id, pin.entry, now);
      return pin.entry;
    }
    // After a failure, prefer any other proxy; the failed one only when it is the last one usable.
    const avoid = pin !== undefined && this.faulted(pin) ? pin.entry : null;
    const next =
      (avoid === null ? fresh(ok) : fresh((e) => e !== avoid && ok(e))) ??
      (avoid !== null && !this.gone.has(avoid) && ok(avoid) ? avoid : null);
    return next === null ? null : this.pin(id, next, now);
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

  /** Another instance pinned session `id` (shared state): the same pin here, not told again. */
  applyRemote(id: string, entry: ProxyEntry): void {
    this.sessions.delete(id);
    this.place(id, entry, this.now());
  }

  /** A new pin (the strategy's pick): told to `onPin`. */
  private pin(id: string, entry: ProxyEntry, now: number): ProxyEntry {
    this.place(id, entry, now);
    this.onPin?.(id, entry);
    return entry;
  }

  private place(id: string, entry: ProxyEntry, now: number): void {
    this.sessions.set(id, { entry, expiresAt: now + this.ttlMs, faultGen: this.faults.get(entry) ?? 0 });
    if (this.sessions.size > MAX_SESSIONS) {
      const oldest = this.sessions.keys().next();
      if (!oldest.done) this.sessions.delete(oldest.value);
    }
  }

  /** Idle sessions sit at the front of the map: drop them from there until one is still live. */
  private expire(now: number): void {
    for (const [id, pin] of this.sessions) {
      if (pin.expiresAt > now) return;
      this.sessions.delete(id);
    }
  }
}
