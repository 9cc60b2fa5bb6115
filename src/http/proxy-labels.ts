import { safeLabel } from '../pool/label.ts';
import type { Pool } from '../pool/pool.ts';

/**
 * Labels for proxies that people can tell apart: `scheme://host:port`, and, where several proxies share
 * it (one provider gateway, many accounts or sessions), its safe label (pool/label.ts: the operator's
 * label or the username's non-secret words, never a password) and the id's first eight characters.
 */
const MEMO_MS = 1_000;

export class ProxyLabels {
  readonly #pool: Pool;
  readonly #now: () => number;
  #at = Number.NEGATIVE_INFINITY;
  /** url → how many proxies have it; labels made in this period, by id. */
  #shared = new Map<string, number>();
  #labels = new Map<string, string>();

  constructor(pool: Pool, now: () => number) {
    this.#pool = pool;
    this.#now = now;
  }

  /** The proxy's label, or null when it is not in the pool (any more). */
  labelOf = (id: string): string | null => {
    this.#refresh();
    const known = this.#labels.get(id);
    if (known !== undefined) return known;
    const e = this.#pool.get(id);
    if (e === undefined) return null;
    let label = e.url;
    if ((this.#shared.get(e.url) ?? 0) > 1) {
      const safe = safeLabel(e.record);
      label = `${e.url} (${safe === null ? '' : `${safe}, `}${id.slice(0, 8)})`;
    }
    this.#labels.set(id, label);
    return label;
  };

  #refresh(): void {
    const now = this.#now();
    if (now - this.#at < MEMO_MS) return;
    this.#at = now;
    this.#labels = new Map();
    const shared = new Map<string, number>();
    for (const e of this.#pool.all()) shared.set(e.url, (shared.get(e.url) ?? 0) + 1);
    this.#shared = shared;
  }
}
