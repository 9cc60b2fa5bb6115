import type { CooldownTable } from './cooldowns.ts';
import { banSignal, type TargetAnswer } from './detect.ts';
import type { BanPolicyHolder } from './policy.ts';

/** What the rest of Rota hears of a ban (metrics, retry metrics' events). */
export interface BanEvent {
  readonly proxyId: string;
  readonly host: string;
  readonly status: number;
  readonly until: number;
  readonly count: number;
}

/**
 * Judges target answers for the engine (outbound/attempt.ts): a ban cools the pair (proxy, host) down
 * and is reported; nothing else about the proxy changes (not its breaker, not its health).
 */
export class BanJudge {
  readonly #policy: BanPolicyHolder;
  readonly #table: CooldownTable;
  readonly #onBan: (e: BanEvent) => void;
  readonly #now = (): number => this.#table.now();

  constructor(policy: BanPolicyHolder, table: CooldownTable, onBan: (e: BanEvent) => void) {
    this.#policy = policy;
    this.#table = table;
    this.#onBan = onBan;
  }

  /** True when `answer` is a ban of `proxyId` by `host` (and the pair is now cooling down). */
  judge(proxyId: string, host: string, answer: TargetAnswer): boolean {
    const policy = this.#policy.get();
    const signal = banSignal(policy, answer, this.#now);
    if (signal === undefined) return false;
    const c = this.#table.ban(proxyId, host, {
      cooldownS: policy.cooldown_s,
      maxCooldownS: policy.max_cooldown_s,
      retryAfterS: signal.retryAfterS,
    });
    this.#onBan({ proxyId, host, status: answer.status, until: c.until, count: c.count });
    return true;
  }
}

/** The host a ban is about: the target's lower-case host name, without port or IPv6 brackets. */
export function banHost(url: URL | { hostname: string }): string {
  const h = url.hostname.toLowerCase();
  return h.startsWith('[') ? h.slice(1, -1) : h;
}

/** The target's port, the scheme's default when the URL names none (pair refusals, bans/refusals.ts). */
export function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' || url.protocol === 'wss:' ? 443 : 80;
}
