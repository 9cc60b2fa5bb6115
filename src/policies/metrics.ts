import { Counter, type Registry } from 'prom-client';

/**
 * Per-rule counters. The `rule` label takes policy rule names only (at most 200 of them, policies/
 * schema.ts), never a host; series of rules no longer in the list are dropped when it changes.
 */
export class PolicyMetrics {
  readonly #requests: Counter<'rule'>;
  readonly #bans: Counter<'rule'>;
  readonly #limited: Counter<'rule'>;
  /** Rule names with a series, so that those of removed rules can be dropped. */
  readonly #seen = new Set<string>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.#requests = new Counter({
      name: 'rota_policy_requests_total',
      help: 'Calls a policy rule applied to',
      labelNames: ['rule'],
      registers,
    });
    this.#bans = new Counter({
      name: 'rota_policy_bans_total',
      help: 'Bans seen on calls a policy rule applied to',
      labelNames: ['rule'],
      registers,
    });
    this.#limited = new Counter({
      name: 'rota_policy_rate_limited_total',
      help: "Calls a policy rule's host_rate_limit or min_interval_ms refused (429 HOST_RATE_LIMITED)",
      labelNames: ['rule'],
      registers,
    });
  }

  request(rule: string): void {
    this.#seen.add(rule);
    this.#requests.inc({ rule });
  }

  ban(rule: string): void {
    this.#seen.add(rule);
    this.#bans.inc({ rule });
  }

  rateLimited(rule: string): void {
    this.#seen.add(rule);
    this.#limited.inc({ rule });
  }

  /** Keeps only the series of rules in `names`. */
  keep(names: ReadonlySet<string>): void {
    for (const rule of [...this.#seen]) {
      if (names.has(rule)) continue;
      this.#seen.delete(rule);
      for (const c of [this.#requests, this.#bans, this.#limited]) c.remove({ rule });
    }
  }
}
