import type { Cooldown, CooldownTable } from '../bans/cooldowns.ts';
import { pairKey } from '../bans/refusals.ts';
import type { BreakerRegistry } from '../breaker/registry.ts';
import type { CallerSignal } from '../lib/abort.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import type { SelectionRequest } from '../rotation/types.ts';

/**
 * The one predicate of who may serve a call now. Every rule lives here and nowhere else: the session
 * table and the strategies only ever call it (rotation/types.ts Candidates.eligible), so each strategy
 * honours them all without knowing them.
 *
 *   not tried by this call ∧ of the requested country (a hard filter) ∧ under its in-flight cap
 *   ∧ not cooling down for the target's host (bans/) nor for its host:port (bans/refusals.ts)
 *   ∧ admitted by its breaker
 *
 * `ignore` drops one rule, to ask "would anyone serve but for it?" (the cap: wait for a slot; a
 * cool-down: fall back to the pair whose cool-down ends first).
 */
export interface EligibilityDeps {
  readonly breakers: BreakerRegistry;
  readonly cooldowns: CooldownTable | null;
  /** Pairs (proxy, host:port) cooling down after the proxy refused that target (bans/refusals.ts). */
  readonly refusals: CooldownTable | null;
  /** ROTA_PROXY_MAX_IN_FLIGHT; 0: no cap. */
  readonly maxInFlight: number;
}

export type Eligible = (e: ProxyEntry) => boolean;

export function eligibility(
  d: EligibilityDeps,
  req: SelectionRequest,
  ignore?: 'cap' | 'cooldown',
): Eligible {
  const { exclude, onlyCountry } = req;
  const breakers = d.breakers;
  const cap = ignore === 'cap' ? 0 : d.maxInFlight;
  const cool = ignore === 'cooldown' ? undefined : coolingFor(d, req);
  // The common case, nothing but exclusions and breakers: the cheapest closure.
  if (onlyCountry === undefined && cap === 0 && cool === undefined) {
    return (e) => !exclude?.has(e.record.id) && breakers.isAdmissible(e.record.id);
  }
  const now = cool === undefined ? 0 : ((d.cooldowns ?? d.refusals)?.now() ?? 0);
  return (e) => {
    const id = e.record.id;
    if (exclude?.has(id)) return false;
    if (onlyCountry !== undefined && e.country !== onlyCountry) return false;
    if (cap > 0 && e.inFlight >= cap) return false;
    if (cool !== undefined && coolUntil(cool, id) > now) return false;
    return breakers.isAdmissible(id);
  };
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
  req: SelectionRequest,
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
