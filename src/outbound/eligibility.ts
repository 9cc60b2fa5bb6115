import type { Cooldown, CooldownTable } from '../bans/cooldowns.ts';
import { pairKey } from '../bans/refusals.ts';
import type { BreakerRegistry } from '../breaker/registry.ts';
import type { CallerSignal } from '../lib/abort.ts';
import type { LastStarts } from '../policies/pace.ts';
import { passesFilter, type Rule } from '../policies/rulebook.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import type { SessionTerms } from '../rotation/sessions.ts';
import type { SelectionRequest } from '../rotation/types.ts';
import { servesAnyCountry } from './gateways.ts';

/**
 * The one predicate of who may serve a call now. Every rule lives here and nowhere else: the session
 * table and the strategies only ever call it (rotation/types.ts Candidates.eligible), so each strategy
 * honours them all without knowing them.
 *
 *   not tried by this call ∧ of the requested country (a hard filter) ∧ under its in-flight cap
 *   ∧ not cooling down for the target's host (bans/) nor for its host:port (bans/refusals.ts)
 *   ∧ of the tags and countries the call's policy rule asks ∧ past the rule's interval since it last
 *     started a request to the host (min_interval_ms) ∧ admitted by its breaker
 *
 * A policy rule (policies/) enters here and in the call prelude only: never in a door or a strategy.
 * `ignore` drops one rule, to ask "would anyone serve but for it?" (the cap: wait for a slot; a
 * cool-down: fall back to the pair whose cool-down ends first; the pace: wait for the interval).
 */
export interface EligibilityDeps {
  readonly breakers: BreakerRegistry;
  readonly cooldowns: CooldownTable | null;
  /** Pairs (proxy, host:port) cooling down after the proxy refused that target (bans/refusals.ts). */
  readonly refusals: CooldownTable | null;
  /** ROTA_PROXY_MAX_IN_FLIGHT; 0: no cap. */
  readonly maxInFlight: number;
  /** When each proxy last started a request to each host (a rule's min_interval_ms). */
  readonly lastStarts: LastStarts;
  readonly now: () => number;
}

/** A selection as the engine asks it: the strategies' request, and what the call's policy adds. */
export interface Selection extends SelectionRequest {
  /** The policy rule that applies to the call (policies/), if any. */
  readonly rule?: Rule | undefined;
  /** The session's terms (rotation/sessions.ts); absent: the defaults. */
  readonly terms?: SessionTerms | undefined;
  /** A ban does not move the session: its pin stays eligible while it cools down for the host. */
  readonly keepOnBan?: boolean | undefined;
}

export type Eligible = (e: ProxyEntry) => boolean;

export type Ignored = 'cap' | 'cooldown' | 'pace';

export function eligibility(d: EligibilityDeps, req: Selection, ignore?: Ignored): Eligible {
  const { exclude, onlyCountry, rule } = req;
  const breakers = d.breakers;
  const cap = ignore === 'cap' ? 0 : (rule?.maxInFlight ?? d.maxInFlight);
  const cool = ignore === 'cooldown' ? undefined : coolingFor(d, req);
  // The common case, nothing but exclusions and breakers: the cheapest closure.
  if (onlyCountry === undefined && cap === 0 && cool === undefined && rule === undefined) {
    return (e) => !exclude?.has(e.record.id) && breakers.isAdmissible(e.record.id);
  }
  const now = cool === undefined ? 0 : ((d.cooldowns ?? d.refusals)?.now() ?? 0);
  const filter = rule?.filter ?? null;
  const paced = ignore === 'pace' ? undefined : pacing(d, req);
  return (e) => {
    const id = e.record.id;
    if (exclude?.has(id)) return false;
    if (onlyCountry !== undefined && e.country !== onlyCountry && !servesAnyCountry(e.record)) return false;
    if (cap > 0 && e.inFlight >= cap) return false;
    if (cool !== undefined && coolUntil(cool, id) > now) return false;
    // A gateway rendering {country} is of any country asked: of the listener's when one is (which the
    // rule must allow too), else of any the rule allows.
    if (filter !== null) {
      const country = servesAnyCountry(e.record) ? (onlyCountry ?? true) : e.country;
      if (!passesFilter(filter, e.record.tags, country)) return false;
    }
    if (paced !== undefined && d.lastStarts.freeAt(paced.host, id, paced.ms) > paced.now) return false;
    return breakers.isAdmissible(id);
  };
}

/** The rule's interval between two starts through one proxy to the target's host, when it sets one. */
function pacing(d: EligibilityDeps, req: Selection): { host: string; ms: number; now: number } | undefined {
  const ms = req.rule?.minIntervalMs;
  if (ms === undefined || req.host === undefined) return undefined;
  return { host: req.host, ms, now: d.now() };
}

/**
 * Ms until the first member eligible but for the pace may start a request to the host; null when the
 * pace holds nobody back (nobody eligible even without it, or no pace).
 */
export function paceWaitMs(
  d: EligibilityDeps,
  req: Selection,
  members: readonly ProxyEntry[],
): number | null {
  const paced = pacing(d, req);
  if (paced === undefined) return null;
  const ok = eligibility(d, req, 'pace');
  let first = Number.POSITIVE_INFINITY;
  for (const e of members) {
    if (!ok(e)) continue;
    first = Math.min(first, d.lastStarts.freeAt(paced.host, e.record.id, paced.ms));
  }
  return first === Number.POSITIVE_INFINITY ? null : Math.max(0, first - paced.now);
}

/** The cool-down maps that apply to the call's target: its host's bans and its host:port's refusals. */
type Cooling = readonly [
  ReadonlyMap<string, Cooldown> | undefined,
  ReadonlyMap<string, Cooldown> | undefined,
];

function coolingFor(d: EligibilityDeps, req: SelectionRequest): Cooling | undefined {
  if (req.host === undefined) return undefined;
  const bans = d.cooldowns?.forHost(req.host);
  // The refusal table is empty nearly always: its key is built only when there is something to find.
  const refusals =
    req.port !== undefined && d.refusals !== null && d.refusals.size > 0
      ? d.refusals.forHost(pairKey(req.host, req.port))
      : undefined;
  return bans === undefined && refusals === undefined ? undefined : [bans, refusals];
}

/** When `id`'s cool-downs for the target end (epoch ms); 0 when it has none. */
function coolUntil(cool: Cooling, id: string): number {
  const a = cool[0]?.get(id)?.until ?? 0;
  const b = cool[1]?.get(id)?.until ?? 0;
  return Math.max(a, b);
}

/** Among `members`, the one eligible but for its cool-down whose cool-down ends first (null: none). */
export function earliestCooled(
  d: EligibilityDeps,
  req: Selection,
  members: readonly ProxyEntry[],
): ProxyEntry | null {
  const cool = coolingFor(d, req);
  if (cool === undefined) return null;
  const ok = eligibility(d, req, 'cooldown');
  let best: ProxyEntry | null = null;
  let bestUntil = Number.POSITIVE_INFINITY;
  for (const e of members) {
    const until = coolUntil(cool, e.record.id);
    if (until !== 0 && until < bestUntil && ok(e)) {
      best = e;
      bestUntil = until;
    }
  }
  return best;
}

/**
 * Calls waiting for a proxy under its cap (every eligible one is at it). Each attempt that ends wakes
 * the longest waiting call, which picks again; a wait is bounded by the call's deadline.
 */
export class SlotWaiters {
  readonly #waiting: (() => void)[] = [];

  get size(): number {
    return this.#waiting.length;
  }

  /** True when woken, false at `ms` or when `signal` fires. */
  wait(ms: number, signal?: CallerSignal): Promise<boolean> {
    if (ms <= 0 || signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (woken: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const i = this.#waiting.indexOf(wake);
        if (i !== -1) this.#waiting.splice(i, 1);
        resolve(woken);
      };
      const wake = () => done(true);
      const onAbort = () => done(false);
      const timer = setTimeout(() => done(false), ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(wake);
    });
  }

  wakeOne(): void {
    this.#waiting[0]?.();
  }
}
