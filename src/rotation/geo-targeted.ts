import { countryMoves } from '../pool/entry.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import { servesAnyCountry } from '../pool/types.ts';
import { MemberSync, RoundRobinCursor, usable } from './shared.ts';
import type { Candidates, SelectionRequest, Strategy } from './types.ts';

/** The effective country (declared, else the exit's: pool/members.ts effectiveCountry), upper case already. */
function countryOf(e: ProxyEntry): string | null {
  return e.country;
}

/**
 * Round-robin over the usable members whose `country` matches the request's `country`; when none of those
 * is usable, over the gateways that render `{country}` (the provider serves any country asked). When none
 * is (or none of those is usable now), it falls back to round-robin over every usable member: the strategy *prefers*
 * matching proxies (docs/decisions.md, "Rotation and sessions"), and an answer through another country serves
 * the caller better than a failed request. Without a country it is plain round-robin. Members are indexed by
 * country, so a selection does not scan the pool.
 */
export class GeoTargetedStrategy implements Strategy {
  readonly name = 'geo-targeted' as const;
  private readonly byCountry = new Map<string, ProxyEntry[]>();
  private readonly cursors = new Map<string, RoundRobinCursor>();
  private readonly indexed = new Set<ProxyEntry>();
  private readonly sync = new MemberSync();
  private readonly fallback = new RoundRobinCursor();
  /** Gateways that render the call's country (servesAnyCountry), with their own cursor. */
  private readonly anyCountry: ProxyEntry[] = [];
  private readonly anyCursor = new RoundRobinCursor();
  private moves = countryMoves.count;

  select(c: Candidates, req: SelectionRequest): ProxyEntry | null {
    const ok = usable(c, req);
    const country = req.country?.toUpperCase();
    if (country) {
      this.ensure(c.members);
      const list = this.byCountry.get(country);
      const hit = list ? this.cursorFor(country).next(list, ok) : null;
      if (hit) return hit;
      const rendered = this.anyCountry.length > 0 ? this.anyCursor.next(this.anyCountry, ok) : null;
      if (rendered) return rendered;
    }
    return this.fallback.next(c.members, ok);
  }

  added(e: ProxyEntry): void {
    if (this.sync.built) this.insert(e);
  }

  removed(e: ProxyEntry): void {
    if (!this.indexed.delete(e)) return;
    const any = this.anyCountry.indexOf(e);
    if (any !== -1) this.anyCountry.splice(any, 1);
    const country = countryOf(e);
    if (country === null) return;
    const list = this.byCountry.get(country);
    if (!list) return;
    const idx = list.indexOf(e);
    if (idx !== -1) list.splice(idx, 1);
    if (list.length === 0) {
      this.byCountry.delete(country);
      this.cursors.delete(country);
    }
  }

  private cursorFor(country: string): RoundRobinCursor {
    let cur = this.cursors.get(country);
    if (!cur) {
      cur = new RoundRobinCursor();
      this.cursors.set(country, cur);
    }
    return cur;
  }

  private insert(e: ProxyEntry): void {
    if (this.indexed.has(e)) return;
    this.indexed.add(e);
    if (servesAnyCountry(e.record)) this.anyCountry.push(e);
    const country = countryOf(e);
    if (country === null) return;
    const list = this.byCountry.get(country);
    if (list) list.push(e);
    else this.byCountry.set(country, [e]);
  }

  private ensure(members: readonly ProxyEntry[]): void {
    // A member's country moved since the build (pool/entry.ts countryMoves): rebuilt like a missed change.
    const moved = this.moves !== countryMoves.count;
    if (!moved && !this.sync.stale(members, this.indexed.size)) return;
    this.moves = countryMoves.count;
    this.indexed.clear();
    this.byCountry.clear();
    this.anyCountry.length = 0;
    for (const e of members) this.insert(e);
    this.sync.synced(members);
  }
}
