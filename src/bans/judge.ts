import type { BanTerms, CooldownTable } from './cooldowns.ts';
import { banSignal, type TargetAnswer } from './detect.ts';
import type { BanPolicy, BanPolicyHolder } from './policy.ts';

/** A policy rule as ban detection reads it (policies/rulebook.ts): its ban fields over the ban policy. */
export interface BanRule {
  readonly name: string;
  readonly ban?: Partial<Pick<BanPolicy, 'status_codes' | 'body_patterns' | 'cooldown_s'>> | undefined;
}

/** What the rest of Rota hears of a ban (metrics, retry metrics' events). */
export interface BanEvent {
  readonly proxyId: string;
  readonly host: string;
  readonly status: number;
  readonly until: number;
  readonly count: number;
  /** The policy rule of the call that saw it, if any. */
  readonly rule?: string | undefined;
  /** Seen, nothing cooled (a gateway's one-use provider session): not told to other instances. */
  readonly transient?: boolean;
}

/**
 * Judges target answers for the engine (outbound/attempt.ts): a ban cools the pair (proxy, host) down
 * and is reported; nothing else about the proxy changes (not its breaker, not its health).
 */
export class BanJudge {
  readonly #policy: BanPolicyHolder;
  readonly #table: CooldownTable;
  readonly #onBan: (e: BanEvent) => void;
  readonly #sharers: (proxyId: string) => readonly string[];
  readonly #now = (): number => this.#table.now();

  /**
   * `sharers`: the other proxies last seen exiting from the banned one's address (exit/): a site bans an
   * address, so each of them cools down for the host too, and is reported as banned like it.
   */
  constructor(
    policy: BanPolicyHolder,
    table: CooldownTable,
    onBan: (e: BanEvent) => void,
    sharers: (proxyId: string) => readonly string[] = () => [],
  ) {
    this.#policy = policy;
    this.#table = table;
    this.#onBan = onBan;
    this.#sharers = sharers;
  }

  /** Cools (proxy, host) down, and (sharer, host) for each proxy sharing its exit; the proxy's cool-down. */
  #ban(proxyId: string, host: string, o: BanTerms, event: Omit<BanEvent, 'proxyId' | 'until' | 'count'>) {
    const c = this.#table.ban(proxyId, host, o);
    for (const other of this.#sharers(proxyId)) {
      const s = this.#table.ban(other, host, o);
      this.#onBan({ ...event, proxyId: other, until: s.until, count: s.count });
    }
    return c;
  }

  /** True when `answer` is a ban of `proxyId` by `host` (and the pair is now cooling down). */
  /** `cool` false: the ban moves the call and is counted, but no pair cools down (outbound/gateways.ts). */
  judge(proxyId: string, host: string, answer: TargetAnswer, rule?: BanRule, cool = true): boolean {
    const global = this.#policy.get();
    // A rule that sets ban fields turns detection on for its calls, whatever the global switch.
    const policy = rule?.ban === undefined ? global : { ...global, ...rule.ban, enabled: true };
    const signal = banSignal(policy, answer, this.#now);
    if (signal === undefined) return false;
    if (!cool) {
      this.#onBan({
        proxyId,
        host,
        status: answer.status,
        until: 0,
        count: 0,
        rule: rule?.name,
        transient: true,
      });
      return true;
    }
    const terms = {
      cooldownS: policy.cooldown_s,
      maxCooldownS: Math.max(policy.max_cooldown_s, policy.cooldown_s),
      retryAfterS: signal.retryAfterS,
    };
    const c = this.#ban(proxyId, host, terms, { host, status: answer.status, rule: rule?.name });
    this.#onBan({ proxyId, host, status: answer.status, until: c.until, count: c.count, rule: rule?.name });
    return true;
  }

  /**
   * A ban a client saw where Rota could not (inside a tunnel it does not open): the same cool-down table,
   * doubling and bounds as a ban Rota judged. `cooldownS` is capped at the policy's max_cooldown_s.
   */
  report(proxyId: string, host: string, cooldownS?: number): BanEvent {
    const policy = this.#policy.get();
    const first = Math.min(cooldownS ?? policy.cooldown_s, policy.max_cooldown_s);
    const terms = {
      cooldownS: first,
      maxCooldownS: Math.max(policy.max_cooldown_s, first),
      retryAfterS: null,
    };
    const c = this.#ban(proxyId, host, terms, { host, status: 0 });
    const e: BanEvent = { proxyId, host, status: 0, until: c.until, count: c.count };
    this.#onBan(e);
    return e;
  }
}

/** The host a ban is about: the target's lower-case host name, without port or IPv6 brackets. */
export function banHost(url: URL | { hostname: string }): string {
  const h = url.hostname.toLowerCase();
  if (h.startsWith('[')) return h.slice(1, -1);
  // `a.test.` is `a.test` (a fully qualified name): one site, one set of bans, paces and host sessions.
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

/** The target's port, the scheme's default when the URL names none (pair refusals, bans/refusals.ts). */
export function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' || url.protocol === 'wss:' ? 443 : 80;
}
