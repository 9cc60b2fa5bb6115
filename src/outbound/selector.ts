import type { BreakerRegistry } from '../breaker/registry.ts';
import type { StrategyName } from '../config.ts';
import type { RuntimeSettings } from '../control/settings.ts';
import type { Pool, ProxyEntry } from '../pool/pool.ts';
import { createStrategy } from '../rotation/index.ts';
import type { AttemptOutcome, Candidates, SelectionRequest, Strategy } from '../rotation/types.ts';

/**
 * Joins the pool, the breakers and the configured strategy. The strategy is swapped as soon as
 * `PUT config` changes it; the new one is told about every member once, at the switch.
 */
export class Selector {
  private strategy: Strategy;
  private lastRotationAt: number | null = null;
  private readonly pool: Pool;
  private readonly breakers: BreakerRegistry;
  private readonly settings: RuntimeSettings;
  private readonly deps: { random: () => number; now: () => number };

  constructor(
    pool: Pool,
    breakers: BreakerRegistry,
    settings: RuntimeSettings,
    deps: { random: () => number; now: () => number },
  ) {
    this.pool = pool;
    this.breakers = breakers;
    this.settings = settings;
    this.deps = deps;
    this.strategy = this.build(settings.get().rotation_strategy);
  }

  private build(name: StrategyName): Strategy {
    const s = createStrategy(name, this.deps);
    for (const e of this.pool.all()) s.added?.(e);
    return s;
  }

  private current(): Strategy {
    const want = this.settings.get().rotation_strategy;
    if (this.strategy.name !== want) this.strategy = this.build(want);
    return this.strategy;
  }

  get lastRotation(): number | null {
    return this.lastRotationAt;
  }

  /** Whether a pick excluding `exclude` could return a member now, without advancing any strategy. */
  hasCandidate(exclude: ReadonlySet<string>): boolean {
    for (const e of this.pool.all()) {
      if (!exclude.has(e.record.id) && this.breakers.isAdmissible(e.record.id)) return true;
    }
    return false;
  }

  pick(req: SelectionRequest): ProxyEntry | null {
    const exclude = req.exclude;
    const breakers = this.breakers;
    const candidates: Candidates = {
      members: this.pool.all(),
      eligible: (e) => !exclude?.has(e.record.id) && breakers.isAdmissible(e.record.id),
    };
    const chosen = this.current().select(candidates, req);
    if (chosen) this.lastRotationAt = this.deps.now();
    return chosen;
  }

  record(e: ProxyEntry, outcome: AttemptOutcome): void {
    this.strategy.record?.(e, outcome);
  }

  inFlight(e: ProxyEntry, delta: 1 | -1): void {
    e.inFlight += delta;
    this.strategy.inFlightChanged?.(e);
  }

  added(e: ProxyEntry): void {
    this.strategy.added?.(e);
  }

  removed(e: ProxyEntry): void {
    this.strategy.removed?.(e);
  }
}
