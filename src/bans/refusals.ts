import type { CooldownTable } from './cooldowns.ts';

/**
 * Refusals of one target by one proxy: the proxy answered a CONNECT with a 4xx other than 407, a SOCKS
 * refusal, or said it could not reach the target (upstream/types.ts PAIR_FAULTS). The target is the
 * client's choice, so the refusal is held against the pair (proxy, target host:port) only: that pair
 * cools down (short, doubling on repeats, like a ban) and the call fails over; the proxy's breaker and
 * health are untouched, and every other target still gets the proxy.
 *
 * A proxy that refuses everything is still found out, but never on a client's word: once a proxy has
 * refused `confirmAfter` distinct targets within the window, it is health-checked (the operator's
 * ROTA_HEALTH_CHECK_URL, which no client chooses) at most once per window, and that check's verdict is
 * what reaches its breaker and health.
 *
 *   attempt ──target_refused / target_unreachable──▶ pairs.cool(proxy, host:port) ──▶ eligibility skips it
 *                                                        │ N distinct targets in the window
 *                                                        ▼
 *                                                  confirm(proxy) = one health check
 */

export interface RefusalTerms {
  /** First cool-down of a pair, seconds; doubles on each repeat. */
  readonly cooldownS: number;
  /** Longest cool-down, seconds. */
  readonly maxCooldownS: number;
  /** Distinct refused targets of one proxy, within `windowS`, that call for a health check of it. */
  readonly confirmAfter: number;
  /** The window, seconds; also the least time between two confirmations of one proxy. */
  readonly windowS: number;
}

export const DEFAULT_REFUSAL_TERMS: RefusalTerms = {
  cooldownS: 60,
  maxCooldownS: 3600,
  confirmAfter: 5,
  windowS: 60,
};

export interface RefusalEvent {
  readonly proxyId: string;
  readonly target: string;
  readonly until: number;
  readonly count: number;
}

/** The pair's key in the table: `host:port`, an IPv6 host in brackets. */
export function pairKey(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Per proxy: the targets it refused lately (key → when, epoch ms), and when it was last confirmed. */
interface Recent {
  readonly targets: Map<string, number>;
  confirmedAt: number;
}

export class TargetRefusals {
  readonly table: CooldownTable;
  readonly #terms: RefusalTerms;
  readonly #confirm: (proxyId: string) => void;
  readonly #onRefusal: (e: RefusalEvent) => void;
  readonly #recent = new Map<string, Recent>();

  constructor(
    table: CooldownTable,
    opts: {
      terms?: RefusalTerms;
      confirm: (proxyId: string) => void;
      onRefusal?: (e: RefusalEvent) => void;
    },
  ) {
    this.table = table;
    this.#terms = opts.terms ?? DEFAULT_REFUSAL_TERMS;
    this.#confirm = opts.confirm;
    this.#onRefusal = opts.onRefusal ?? (() => {});
  }

  /**
   * `proxyId` refused (or could not reach) `host:port`: the pair cools down. `coolKey` is what cools: the
   * proxy's id, or for a gateway its provider session (`gateway#session`, whose exit it was), or nothing
   * (null: a gateway call without a session, whose one-use exit no call meets again). The gateway's own
   * id still counts the refused targets that call for a health check of it.
   */
  refused(proxyId: string, host: string, port: number, coolKey: string | null = proxyId): void {
    const target = pairKey(host, port);
    if (coolKey !== null) {
      const t = this.#terms;
      const c = this.table.ban(coolKey, target, {
        cooldownS: t.cooldownS,
        maxCooldownS: t.maxCooldownS,
        retryAfterS: null,
      });
      this.#onRefusal({ proxyId: coolKey, target, until: c.until, count: c.count });
    }
    this.#maybeConfirm(proxyId, target);
  }

  #maybeConfirm(proxyId: string, target: string): void {
    const now = this.table.now();
    const windowMs = this.#terms.windowS * 1000;
    let r = this.#recent.get(proxyId);
    if (r === undefined) {
      r = { targets: new Map(), confirmedAt: Number.NEGATIVE_INFINITY };
      this.#recent.set(proxyId, r);
    }
    r.targets.delete(target);
    r.targets.set(target, now);
    // Oldest first (insertion order): drop what left the window, and never keep more than needed.
    for (const [k, at] of r.targets) {
      if (now - at <= windowMs && r.targets.size <= this.#terms.confirmAfter) break;
      r.targets.delete(k);
    }
    if (r.targets.size < this.#terms.confirmAfter || now - r.confirmedAt < windowMs) return;
    r.confirmedAt = now;
    r.targets.clear();
    this.#confirm(proxyId);
  }

  removeProxy(proxyId: string): void {
    this.#recent.delete(proxyId);
    this.table.removeProxy(proxyId);
  }
}
