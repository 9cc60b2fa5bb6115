import type { StrategyName } from '../config.ts';
import { GeoTargetedStrategy } from './geo-targeted.ts';
import { LeastUsedStrategy } from './least-used.ts';
import { PerformanceBasedStrategy } from './performance-based.ts';
import { RandomStrategy } from './random.ts';
import { RoundRobinStrategy } from './round-robin.ts';
import { SessionPersistenceStrategy } from './session-persistence.ts';
import type { Strategy } from './types.ts';
import { WeightedStrategy } from './weighted.ts';

export interface StrategyDeps {
  /** Uniform in [0, 1); injected so that tests are reproducible. */
  readonly random: () => number;
  /** Milliseconds. */
  readonly now: () => number;
  /** Session idle TTL (sessions.ts); strategies themselves no longer pin sessions. */
  readonly sessionTtlMs?: number | undefined;
}

/**
 * A fresh strategy with empty state. Strategies that keep an index build it from `Candidates.members`
 * on first use, so one can be created (e.g. on `PUT config`) while the pool is already populated.
 */
export function createStrategy(name: StrategyName, deps: StrategyDeps): Strategy {
  switch (name) {
    case 'round-robin':
      return new RoundRobinStrategy();
    case 'random':
      return new RandomStrategy(deps.random);
    case 'weighted':
      return new WeightedStrategy(deps.random);
    case 'least-used':
      return new LeastUsedStrategy();
    case 'performance-based':
      return new PerformanceBasedStrategy(deps.random);
    case 'session-persistence':
      return new SessionPersistenceStrategy();
    case 'geo-targeted':
      return new GeoTargetedStrategy();
    default: {
      const unknown: never = name;
      throw new Error(`unknown strategy ${String(unknown)}`);
    }
  }
}

export type { AttemptOutcome, Candidates, SelectionRequest, Strategy } from './types.ts';
