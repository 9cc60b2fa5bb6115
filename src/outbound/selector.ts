import type { CooldownTable } from '../bans/cooldowns.ts';
import type { BreakerRegistry } from '../breaker/registry.ts';
import type { StrategyName } from '../config.ts';
import type { RuntimeSettings } from '../control/settings.ts';
import type { CallerSignal } from '../lib/abort.ts';
import { LastStarts } from '../policies/pace.ts';
import type { Pool, ProxyEntry } from '../pool/pool.ts';
import { createStrategy } from '../rotation/index.ts';
import { SessionTable, type SessionTerms } from '../rotation/sessions.ts';
import type { AttemptOutcome, Candidates, Strategy } from '../rotation/types.ts';
import { AdmissibleCounts } from './admissible.ts';
import {
  type EligibilityDeps,
  earliestCooled,
  eligibility,
  paceWaitMs,
  type Selection,
  SlotWaiters,
} from './eligibility.ts';
import { servesAnyCountry } from './gateways.ts';

/**
 * Joins the pool, the breakers, the session table and the configured strategy. The strategy is swapped
 * as soon as `PUT config` changes it; the new one is told about every member once, at the switch.
 *
 *   pick(req) ──▶ session pinned and eligible? ──yes──▶ that proxy
 *                          │ no (or no session)
 *                          ▼
 *                 strategy.select(eligible members) ──▶ pinned for the session, if any
 *                 (the call's policy rule may name the strategy: each one used is kept and told of
 *                  every member, attempt and in-flight change, as the configured one is)
 *
 * Every rule about who may serve (breaker, exclusions, country, in-flight cap, ban cool-downs) is one
 * predicate (eligibility.ts): the session table and the strategies only ever see it, never re-implement
 * it.
 */
export class Selector {
  private strategy: Strategy;
  /** The strategies in use: the configured one and those the policy rules name (told by useRuleStrategies). */
  private readonly strategies = new Map<StrategyName, Strategy>();
  private ruleStrategies: ReadonlySet<StrategyName> = new Set();
  private lastRotationAt: number | null = null;
  private readonly pool: Pool;
  private readonly settings: RuntimeSettings;
  private readonly deps: { random: () => number; now: () => number };
  private readonly sessions: SessionTable;
  private readonly rules: EligibilityDeps;
  private readonly slots = new SlotWaiters();
  private readonly admissible: AdmissibleCounts;

  constructor(
    pool: Pool,
    breakers: BreakerRegistry,
    settings: RuntimeSettings,
    deps: {
      random: () => number;
      now: () => number;
      cooldowns?: CooldownTable | null;
      refusals?: CooldownTable | null;
      maxInFlight?: number;
      sessionDefaults?: SessionTerms;
    },
  ) {
    this.pool = pool;
    this.settings = settings;
    this.deps = deps;
    this.rules = {
      breakers,
      cooldowns: deps.cooldowns ?? null,
      refusals: deps.refusals ?? null,
      maxInFlight: deps.maxInFlight ?? 0,
      lastStarts: new LastStarts(),
      now: deps.now,
    };
    this.sessions = new SessionTable({ now: deps.now, defaults: deps.sessionDefaults });
    this.admissible = new AdmissibleCounts(pool, breakers);
    this.strategy = this.build(settings.get().rotation_strategy);
  }

  private build(name: StrategyName): Strategy {
    const known = this.strategies.get(name);
    if (known !== undefined) return known;
    const s = createStrategy(name, this.deps);
    for (const e of this.pool.all()) s.added?.(e);
    this.strategies.set(name, s);
    return s;
  }

  private current(): Strategy {
    const want = this.settings.get().rotation_strategy;
    if (this.strategy.name !== want) {
      this.strategy = this.build(want);
      this.prune();
    }
    return this.strategy;
  }

  /**
   * The strategies the policy rules name now: kept beside the configured one; any other is dropped, since
   * every attempt's outcome is told to each strategy kept (record, inFlight).
   */
  useRuleStrategies(names: ReadonlySet<StrategyName>): void {
    this.ruleStrategies = names;
    this.prune();
  }

  /** The strategies kept now (each is told every attempt's outcome). */
  get strategiesInUse(): readonly StrategyName[] {
    return [...this.strategies.keys()];
  }

  private prune(): void {
    for (const name of [...this.strategies.keys()]) {
      if (name !== this.strategy.name && !this.ruleStrategies.has(name)) this.strategies.delete(name);
    }
  }

  private strategyOf(req: Selection): Strategy {
    const named = req.rule?.strategy;
    return named === undefined ? this.current() : this.build(named);
  }

  get lastRotation(): number | null {
    return this.lastRotationAt;
  }

  /**
   * Whether any member (of `country`) is admitted by its breaker, or may be: from counts kept up to date
   * (admissible.ts), for the question every listener call asks before its SSRF lookup.
   */
  anyAdmissible(country?: string): boolean {
    return this.admissible.any(country);
  }

  /** Whether a pick for `req` could return a member now, without advancing any strategy. */
  hasCandidate(req: Selection): boolean {
    const eligible = eligibility(this.rules, req);
    for (const e of this.pool.all()) if (eligible(e)) return true;
    return false;
  }

  /** True when a pick finds nobody only because every eligible member is at its in-flight cap. */
  cappedOnly(req: Selection): boolean {
    if ((req.rule?.maxInFlight ?? this.rules.maxInFlight) === 0) return false;
    // A session waiting for its own proxy's pace is not waiting for a slot (paceWaitMs says how long).
    if (this.waitingPin(req, eligibility(this.rules, req)) !== null) return false;
    const eligible = eligibility(this.rules, req, 'cap');
    for (const e of this.pool.all()) if (eligible(e)) return true;
    return false;
  }

  /** Waits for an attempt to end (a slot may be free): true when one did, false at `ms` or on abort. */
  waitForSlot(ms: number, signal?: CallerSignal): Promise<boolean> {
    return this.slots.wait(ms, signal);
  }

  /** Ids of the members of `country` (the listeners' hard filter), for a Retry-After over just them. */
  idsOfCountry(country: string): string[] {
    const out: string[] = [];
    for (const e of this.pool.all()) {
      if (e.country === country || servesAnyCountry(e.record)) out.push(e.record.id);
    }
    return out;
  }

  /** Ms until the rule's pace (min_interval_ms) lets some proxy start a request to the host; null: no wait helps. */
  paceWaitMs(req: Selection): number | null {
    // A session waits for its own proxy (pinWaits), not for the first free one.
    const pin = this.waitingPin(req, eligibility(this.rules, req));
    if (pin !== null && req.host !== undefined && req.rule?.minIntervalMs !== undefined) {
      const free = this.rules.lastStarts.freeAt(req.host, pin.record.id, req.rule.minIntervalMs);
      return Math.max(0, free - this.deps.now());
    }
    return paceWaitMs(this.rules, req, this.pool.all());
  }

  /**
   * A session pinned to a proxy that the rule's pace (min_interval_ms) holds back from the host for now:
   * the call waits for its proxy (the executor's pace wait) rather than moving the session.
   */
  private waitingPin(req: Selection, eligible: (e: ProxyEntry) => boolean): ProxyEntry | null {
    const id = req.sessionId;
    if (id === undefined || id === '' || req.rule?.minIntervalMs === undefined) return null;
    const pin = this.sessions.peek(id, req.terms);
    return pin !== null && !eligible(pin) && eligibility(this.rules, req, 'pace')(pin) ? pin : null;
  }

  /** An attempt starts through `e` (a rule's pace counts from here). */
  started(e: ProxyEntry, req: Selection): void {
    if (req.rule?.minIntervalMs !== undefined && req.host !== undefined) {
      this.rules.lastStarts.started(req.host, e.record.id, this.deps.now());
    }
  }

  pick(req: Selection): ProxyEntry | null {
    const candidates: Candidates = { members: this.pool.all(), eligible: eligibility(this.rules, req) };
    if (this.waitingPin(req, candidates.eligible) !== null) return null;
    const strategy = this.strategyOf(req);
    const id = req.sessionId;
    const chosen =
      id === undefined || id === ''
        ? strategy.select(candidates, req)
        : this.sessions.select(
            id,
            candidates.eligible,
            (ok) => strategy.select({ members: candidates.members, eligible: ok }, { country: req.country }),
            req.terms,
            req.keepOnBan === true ? eligibility(this.rules, req, 'cooldown') : undefined,
          );
    // Every proxy is cooling down for this target: the one whose cool-down ends first, rather than none.
    const picked =
      chosen ?? (req.coolingFallback ? earliestCooled(this.rules, req, candidates.members) : null);
    if (picked) this.lastRotationAt = this.deps.now();
    return picked;
  }

  /** The session table (shared state replicates its pins). */
  get sessionTable(): SessionTable {
    return this.sessions;
  }

  /** Sessions pinned now (idle ones are dropped lazily). */
  get sessionCount(): number {
    return this.sessions.size;
  }

  record(e: ProxyEntry, outcome: AttemptOutcome): void {
    this.sessions.record(e, outcome);
    if (this.strategies.size === 1) this.strategy.record?.(e, outcome);
    else for (const s of this.strategies.values()) s.record?.(e, outcome);
  }

  inFlight(e: ProxyEntry, delta: 1 | -1): void {
    e.inFlight += delta;
    if (this.strategies.size === 1) this.strategy.inFlightChanged?.(e);
    else for (const s of this.strategies.values()) s.inFlightChanged?.(e);
    if (delta < 0 && this.slots.size > 0) this.slots.wakeOne();
  }

  added(e: ProxyEntry): void {
    for (const s of this.strategies.values()) s.added?.(e);
  }

  removed(e: ProxyEntry): void {
    this.sessions.removed(e);
    for (const s of this.strategies.values()) s.removed?.(e);
  }
}
