import { CircuitBreaker } from './breaker.ts';
import { EventHistory } from './history.ts';
import type { BreakerEvent, BreakerSettings, BreakerSnapshot, BreakerStateName, Permit } from './types.ts';

export interface BreakerRegistryOptions {
  /** `config.breaker`. */
  readonly settings: BreakerSettings;
  /** Epoch ms (wall clock): event timestamps and `next_test_time` are shown to people. */
  readonly now: () => number;
  /** How long an unreleased half-open trial blocks the next one. Default: the breaker timeout. */
  readonly trialLeaseMs?: number | undefined;
  /** Most events kept. Default 10,000. */
  readonly historyCap?: number | undefined;
  /** Events older than this are dropped. Default 24 h. */
  readonly retentionMs?: number | undefined;
}

export type TransitionListener = (e: BreakerEvent) => void;

const DEFAULT_HISTORY_CAP = 10_000;
const DEFAULT_RETENTION_MS = 24 * 3600_000;

/**
 * Every proxy's breaker, keyed by proxy id. The pool calls `add` and `remove` as members come and go;
 * `admit` also creates a missing breaker, so that a wiring slip cannot make a proxy unusable.
 */
export class BreakerRegistry {
  readonly settings: BreakerSettings;
  private readonly breakers = new Map<string, CircuitBreaker>();
  private readonly history: EventHistory;
  private readonly listeners = new Set<TransitionListener>();
  private readonly now: () => number;
  private readonly trialLeaseMs: number | undefined;

  constructor(o: BreakerRegistryOptions) {
    this.settings = o.settings;
    this.now = o.now;
    this.trialLeaseMs = o.trialLeaseMs;
    this.history = new EventHistory(
      o.historyCap ?? DEFAULT_HISTORY_CAP,
      o.retentionMs ?? DEFAULT_RETENTION_MS,
    );
  }

  /** Creates the breaker for a proxy (closed) unless it exists. */
  add(id: string): void {
    this.ensure(id);
  }

  has(id: string): boolean {
    return this.breakers.has(id);
  }

  get size(): number {
    return this.breakers.size;
  }

  /** A permit to send one attempt, or null when the breaker refuses one now. */
  admit(id: string): Permit | null {
    return this.ensure(id).admit();
  }

  /** Whether `admit` would succeed now, without taking a permit. A proxy without a breaker is admissible. */
  isAdmissible(id: string): boolean {
    return this.breakers.get(id)?.isAdmissible() ?? true;
  }

  /** A proxy without a breaker has never failed: closed. */
  state(id: string): BreakerStateName {
    return this.breakers.get(id)?.state() ?? 'closed';
  }

  snapshot(id: string): BreakerSnapshot | undefined {
    return this.breakers.get(id)?.snapshot();
  }

  /** Every breaker, in the order they were added. */
  snapshots(): BreakerSnapshot[] {
    const out: BreakerSnapshot[] = [];
    for (const b of this.breakers.values()) out.push(b.snapshot());
    return out;
  }

  /** Manual reset to closed (always an event, even from closed). False when there is no such breaker. */
  reset(id: string): boolean {
    const b = this.breakers.get(id);
    if (!b) return false;
    b.reset();
    return true;
  }

  /** True while a remote state is being applied: its events are not news to tell the others. */
  applyingRemote = false;

  /** Another instance's transition (shared state); see CircuitBreaker.applyRemote. */
  applyRemote(id: string, to: 'open' | 'closed', at: number, failures: number): void {
    this.applyingRemote = true;
    try {
      this.ensure(id).applyRemote(to, at, failures);
    } finally {
      this.applyingRemote = false;
    }
  }

  /** Forgets a proxy's breaker; permits still out for it become no-ops. Its past events stay in history. */
  remove(id: string): boolean {
    return this.breakers.delete(id);
  }

  /**
   * Events stamped at or after `sinceMs`, oldest first. Every breaker is read first, so that a timeout
   * that elapsed unobserved is in the history too. The sort is stable and each proxy's events were
   * observed in time order, so each proxy's chain of transitions stays in order.
   */
  events(sinceMs: number): BreakerEvent[] {
    for (const b of this.breakers.values()) b.state();
    this.history.expire(this.now());
    return this.history.since(sinceMs).sort((a, b) => a.timestamp - b.timestamp);
  }

  /** Subscribes to every transition; returns the unsubscribe function. */
  onTransition(listener: TransitionListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /**
   * The earliest time (epoch ms) at which one of these breakers admits a request again: now when one
   * already does, the half-open time for an open one. For `Retry-After` when every breaker refuses.
   * Without `ids`, every breaker. Null when there is none to ask about.
   */
  earliestHalfOpenAt(ids?: Iterable<string>): number | null {
    let best: number | null = null;
    const consider = (t: number): void => {
      if (best === null || t < best) best = t;
    };
    if (ids === undefined) {
      for (const b of this.breakers.values()) consider(b.nextAdmitAt());
    } else {
      for (const id of ids) consider(this.breakers.get(id)?.nextAdmitAt() ?? this.now());
    }
    return best;
  }

  private ensure(id: string): CircuitBreaker {
    let b = this.breakers.get(id);
    if (!b) {
      const created: CircuitBreaker = new CircuitBreaker(id, {
        settings: this.settings,
        now: this.now,
        trialLeaseMs: this.trialLeaseMs,
        onEvent: (e) => this.emit(created, e),
      });
      b = created;
      this.breakers.set(id, b);
    }
    return b;
  }

  private emit(source: CircuitBreaker, e: BreakerEvent): void {
    // A removed breaker may still see a late permit release: it is no longer the proxy's breaker.
    if (this.breakers.get(source.id) !== source) return;
    this.history.push(e);
    for (const l of this.listeners) {
      try {
        l(e);
      } catch {
        // A listener (metrics, logs) must not break admission or a permit release in a finally block.
      }
    }
  }
}
