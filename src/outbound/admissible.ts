import type { BreakerRegistry } from '../breaker/registry.ts';
import type { Pool, ProxyEntry } from '../pool/pool.ts';
import { servesAnyCountry } from './gateways.ts';

/**
 * "Could any proxy (of this country) serve a call now?", answered from counts kept up to date as members
 * come and go and breakers change state, not by scanning the pool: the listeners ask it on every call
 * (forward/gateway.ts, before the SSRF lookup), and a scan costs most exactly when most breakers are open.
 *
 * A member is counted as blocked from the moment its breaker opens until it closes. A half-open breaker
 * stays blocked in the count (its one trial may be out); a blocked member may admit again once its open
 * time is over, so when every member is blocked the answer is whether the earliest of them is due, read
 * from those members' breakers only (the same question the executor asks for its Retry-After).
 * A gateway that renders the call's country (gateways.ts servesAnyCountry) counts for every country,
 * under ANY, as the eligibility predicate lets it serve every country.
 */
const ANY = '*';
const countryOf = (e: ProxyEntry): string => (servesAnyCountry(e.record) ? ANY : (e.country ?? ''));

export class AdmissibleCounts {
  readonly #pool: Pool;
  readonly #breakers: BreakerRegistry;
  #members = 0;
  readonly #membersByCountry = new Map<string, number>();
  /** Blocked member id → its country ('' for none). */
  readonly #blocked = new Map<string, string>();
  readonly #blockedByCountry = new Map<string, number>();

  constructor(pool: Pool, breakers: BreakerRegistry) {
    this.#pool = pool;
    this.#breakers = breakers;
    for (const e of pool.all()) this.#added(e);
    pool.listen({
      added: (e) => this.#added(e),
      removed: (e) => this.#removed(e),
      // The effective country moved (PATCH, a GeoIP exit country): counted under the new one.
      updated: (e, before, country) => {
        const was = servesAnyCountry(before) ? ANY : (country ?? '');
        if (was === countryOf(e)) return;
        this.#removed(e, was);
        this.#added(e);
      },
    });
    breakers.onTransition((ev) => {
      if (ev.to_state === 'closed') this.#unblock(ev.proxy_id);
      else this.#block(ev.proxy_id);
    });
  }

  /** True when some member (of `country`, when given) is admitted by its breaker now, or may be. */
  any(country?: string): boolean {
    const count = (m: Map<string, number>) => (m.get(country ?? '') ?? 0) + (m.get(ANY) ?? 0);
    const members = country === undefined ? this.#members : count(this.#membersByCountry);
    if (members === 0) return false;
    const blocked = country === undefined ? this.#blocked.size : count(this.#blockedByCountry);
    if (blocked < members) return true;
    // Every member's breaker was open: is one of them due for its trial?
    for (const [id, c] of this.#blocked) {
      if (country !== undefined && c !== country && c !== ANY) continue;
      if (this.#breakers.isAdmissible(id)) return true;
    }
    return false;
  }

  #added(e: ProxyEntry): void {
    this.#members++;
    const c = countryOf(e);
    this.#membersByCountry.set(c, (this.#membersByCountry.get(c) ?? 0) + 1);
    // A member added again (shared state) may come with its breaker already open.
    if (this.#breakers.state(e.record.id) !== 'closed') this.#block(e.record.id);
  }

  #removed(e: ProxyEntry, c = countryOf(e)): void {
    this.#unblock(e.record.id);
    this.#members--;
    const n = (this.#membersByCountry.get(c) ?? 1) - 1;
    if (n === 0) this.#membersByCountry.delete(c);
    else this.#membersByCountry.set(c, n);
  }

  #block(id: string): void {
    if (this.#blocked.has(id)) return;
    const e = this.#pool.get(id);
    if (e === undefined) return;
    const c = countryOf(e);
    this.#blocked.set(id, c);
    this.#blockedByCountry.set(c, (this.#blockedByCountry.get(c) ?? 0) + 1);
  }

  #unblock(id: string): void {
    const c = this.#blocked.get(id);
    if (c === undefined) return;
    this.#blocked.delete(id);
    const n = (this.#blockedByCountry.get(c) ?? 1) - 1;
    if (n === 0) this.#blockedByCountry.delete(c);
    else this.#blockedByCountry.set(c, n);
  }
}
