import type { BreakerEvent, BreakerSettings, BreakerSnapshot, BreakerStateName, Permit } from './types.ts';

type Reason = BreakerEvent['reason'];

interface Trial {
  readonly gen: number;
  readonly leaseUntil: number;
}

type Phase =
  | { readonly kind: 'closed' }
  | { readonly kind: 'open'; readonly since: number; readonly failureCount: number }
  | {
      readonly kind: 'half-open';
      readonly since: number;
      readonly failureCount: number;
      trial: Trial | null;
    };

export interface BreakerOptions {
  readonly settings: BreakerSettings;
  /** Epoch ms: the same clock stamps events and `next_test_time`, which people read. */
  readonly now: () => number;
  /** How long an unreleased trial permit blocks other trials. Default: the timeout. */
  readonly trialLeaseMs?: number | undefined;
  readonly onEvent: (e: BreakerEvent) => void;
}

const CLOSED: Phase = { kind: 'closed' };

/**
 * One proxy's breaker. Time-driven moves (open → half-open) are computed from the clock on every read,
 * so the state is right the moment the timeout has passed, with no timers to leak.
 *
 * Failures count in a sliding window: `failure_threshold` proxy-fault failures within `window_duration` open
 * it. A success in closed state does not erase earlier failures; they age out of the window. That is the rule
 * as written (docs/decisions.md, "Circuit breakers"), and it keeps a proxy that fails every other request
 * from staying closed.
 *
 * `failure_count` is, in closed state, the failures inside the window; otherwise the failures that
 * opened it plus failed trials since. Events carry the count as it is just after the transition.
 */
export class CircuitBreaker {
  readonly id: string;
  private readonly o: BreakerOptions;
  private phase: Phase = CLOSED;
  /** Failure times, oldest first; never longer than the threshold, since older ones cannot matter. */
  private failures: number[] = [];
  /** Bumped on every transition: a permit taken before a transition reports into a world that is gone. */
  private epoch = 0;
  private trialGen = 0;
  private lastChange: number;
  /** When the last transition happened (0: never), to order local and remote ones. */
  private lastTransitionAt = 0;

  constructor(id: string, o: BreakerOptions) {
    this.id = id;
    this.o = o;
    this.lastChange = o.now();
  }

  state(): BreakerStateName {
    return this.observe().kind;
  }

  /** Cheap check without taking a permit (for selection). */
  isAdmissible(): boolean {
    const p = this.observe();
    if (p.kind === 'closed') return true;
    if (p.kind === 'open') return false;
    return p.trial === null || p.trial.leaseUntil <= this.o.now();
  }

  admit(): Permit | null {
    const p = this.observe();
    if (p.kind === 'closed') return this.permit(false, 0);
    if (p.kind === 'open') return null;
    const now = this.o.now();
    // A lease that ran out means its holder never released it: the safety net against a wedge.
    if (p.trial !== null && p.trial.leaseUntil > now) return null;
    const gen = ++this.trialGen;
    p.trial = { gen, leaseUntil: now + this.leaseMs() };
    return this.permit(true, gen);
  }

  /** When this breaker next admits a request: now when it already does. */
  nextAdmitAt(): number {
    const p = this.observe();
    const now = this.o.now();
    if (p.kind === 'open') return p.since + this.timeoutMs();
    if (p.kind === 'half-open' && p.trial !== null && p.trial.leaseUntil > now) return p.trial.leaseUntil;
    return now;
  }

  reset(): void {
    this.observe();
    this.failures = [];
    this.transition(CLOSED, 'manual_reset', this.o.now());
  }

  snapshot(): BreakerSnapshot {
    const p = this.observe();
    const s = this.o.settings;
    return {
      proxy_id: this.id,
      state: p.kind,
      failure_count: this.failureCount(),
      failure_threshold: s.failureThreshold,
      window_duration: s.windowS,
      timeout_duration: s.timeoutS,
      next_test_time: this.nextTestTime(p),
      last_state_change: this.lastChange,
    };
  }

  private nextTestTime(p: Phase): number | null {
    if (p.kind === 'closed') return null;
    if (p.kind === 'open') return p.since + this.timeoutMs();
    const now = this.o.now();
    return p.trial !== null && p.trial.leaseUntil > now ? p.trial.leaseUntil : p.since;
  }

  private failureCount(): number {
    const p = this.phase;
    if (p.kind !== 'closed') return p.failureCount;
    this.prune(this.o.now());
    return this.failures.length;
  }

  private observe(): Phase {
    const p = this.phase;
    if (p.kind === 'open') {
      const at = p.since + this.timeoutMs();
      if (this.o.now() >= at) {
        const next: Phase = { kind: 'half-open', since: at, failureCount: p.failureCount, trial: null };
        this.transition(next, 'timeout_elapsed', at);
      }
    }
    return this.phase;
  }

  private permit(trial: boolean, gen: number): Permit {
    const epoch = this.epoch;
    let released = false;
    return {
      trial,
      release: (result) => {
        if (released) return;
        released = true;
        this.settle(epoch, trial ? gen : 0, result);
      },
    };
  }

  private settle(epoch: number, gen: number, result: 'success' | 'failure' | 'neutral'): void {
    const p = this.observe();
    if (epoch !== this.epoch) return;
    if (p.kind === 'closed') {
      if (result === 'failure') this.recordFailure();
      return;
    }
    // Only the current trial decides a half-open breaker; anything else in flight is ignored.
    if (p.kind !== 'half-open' || p.trial === null || p.trial.gen !== gen || gen === 0) return;
    const now = this.o.now();
    if (result === 'success') {
      this.failures = [];
      this.transition(CLOSED, 'trial_succeeded', now);
    } else if (result === 'failure') {
      this.transition({ kind: 'open', since: now, failureCount: p.failureCount + 1 }, 'trial_failed', now);
    } else {
      p.trial = null;
    }
  }

  private recordFailure(): void {
    const now = this.o.now();
    this.prune(now);
    this.failures.push(now);
    const threshold = Math.max(1, this.o.settings.failureThreshold);
    if (this.failures.length > threshold) this.failures.shift();
    if (this.failures.length >= threshold) {
      const count = this.failures.length;
      this.failures = [];
      this.transition({ kind: 'open', since: now, failureCount: count }, 'threshold', now);
    }
  }

  private prune(now: number): void {
    const oldest = now - this.o.settings.windowS * 1000;
    let drop = 0;
    while (drop < this.failures.length && (this.failures[drop] ?? 0) <= oldest) drop++;
    if (drop > 0) this.failures.splice(0, drop);
  }

  /**
   * Another instance's breaker for this proxy opened or closed (shared state): take the same state, with
   * its time, so that half-open comes at the same moment everywhere. An older word is ignored.
   */
  applyRemote(to: 'open' | 'closed', at: number, failures: number): void {
    if (at < this.lastTransitionAt) return;
    const p = this.observe();
    if (to === 'closed' && p.kind !== 'closed') {
      this.failures = [];
      this.transition(CLOSED, 'manual_reset', at);
    } else if (to === 'open') {
      this.failures = [];
      this.transition({ kind: 'open', since: at, failureCount: failures }, 'threshold', at);
    }
  }

  private transition(next: Phase, reason: Reason, at: number): void {
    const from = this.phase.kind;
    this.phase = next;
    this.epoch++;
    this.lastChange = at;
    this.lastTransitionAt = at;
    this.o.onEvent({
      proxy_id: this.id,
      from_state: from,
      to_state: next.kind,
      timestamp: at,
      failure_count: this.failureCount(),
      reason,
    });
  }

  private timeoutMs(): number {
    return this.o.settings.timeoutS * 1000;
  }

  private leaseMs(): number {
    return this.o.trialLeaseMs ?? this.timeoutMs();
  }
}
