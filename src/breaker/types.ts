/**
 * Breaker states as they appear in JSON (docs/decisions.md, "Circuit breakers"), from the healthiest; the
 * order is the dashboard's sort order, not the metric values (metrics/exposition.ts).
 */
export const BREAKER_STATES = ['closed', 'half-open', 'open'] as const;
export type BreakerStateName = (typeof BREAKER_STATES)[number];

export interface BreakerSettings {
  readonly failureThreshold: number;
  readonly windowS: number;
  readonly timeoutS: number;
}

/** A breaker state-change event. `timestamp` is epoch ms here; routes render ISO strings. */
export interface BreakerEvent {
  readonly proxy_id: string;
  readonly from_state: BreakerStateName;
  readonly to_state: BreakerStateName;
  readonly timestamp: number;
  readonly failure_count: number;
  readonly reason: 'threshold' | 'timeout_elapsed' | 'trial_succeeded' | 'trial_failed' | 'manual_reset';
}

/** A breaker's state record (GET circuit-breakers) with epoch-ms times. */
export interface BreakerSnapshot {
  readonly proxy_id: string;
  readonly state: BreakerStateName;
  readonly failure_count: number;
  readonly failure_threshold: number;
  readonly window_duration: number;
  readonly timeout_duration: number;
  readonly next_test_time: number | null;
  readonly last_state_change: number;
}

/**
 * Permission to send one attempt through a proxy. `release` must be called exactly once whatever
 * happens (success, failure, abort, exception); a second call is a no-op. In half-open only one
 * permit exists at a time, so forgetting to release would wedge the breaker: callers use try/finally.
 */
export interface Permit {
  readonly trial: boolean;
  /** `success` closes a half-open breaker; `failure` counts (proxy faults only); `neutral` releases only. */
  release(result: 'success' | 'failure' | 'neutral'): void;
}
