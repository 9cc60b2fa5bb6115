/**
 * What the pool hands out and takes in: a member's entry (its record and the state that lives only in
 * this process), the input of an add, the outcome of a bulk add, and the listener of changes. Kept apart
 * from the Pool class so that readers of entries (selection, breakers, stats, the listeners) need not
 * load the pool's logic to name its types.
 */
import type { ExitIdentity, Health, ProxyRecord } from './types.ts';

export interface ProxyStats {
  total: number;
  success: number;
  failed: number;
  latencySumMs: number;
}

/** A pool member: the persisted record plus state that lives only in this process. */
export interface ProxyEntry {
  /** Replaced, never mutated, by an update (PATCH, a learned exit): read it afresh each time. */
  record: ProxyRecord;
  readonly url: string;
  /**
   * The country selection filters on: the declared `country`, else the exit's (GeoIP). Kept here so
   * that a selection reads one field; the pool sets it whenever either changes.
   */
  country: string | null;
  /** The exit last seen (ROTA_EXIT_IP_URL), null when not known. */
  exit: ExitIdentity | null;
  health: Health;
  consecutiveFailures: number;
  inFlight: number;
  readonly stats: ProxyStats;
  /** With shared state: the cluster-wide counters of this proxy (shared-state/cluster-stats.ts). */
  cluster?: ProxyStats;
}

export interface AddProxyInput {
  url: string;
  username?: string | undefined;
  password?: string | undefined;
  weight?: number | undefined;
  country?: string | undefined;
  tags?: string[] | undefined;
  label?: string | undefined;
  username_template?: string | undefined;
  password_template?: string | undefined;
}

/** A change of a member (PATCH): absent keys are kept, null clears. */
export interface ProxyPatch {
  weight?: number | undefined;
  country?: string | null | undefined;
  tags?: string[] | undefined;
  label?: string | null | undefined;
  username?: string | null | undefined;
  password?: string | null | undefined;
  username_template?: string | null | undefined;
  password_template?: string | null | undefined;
}

/** What became of one input of `addMany`, in input order. */
export type BulkOutcome =
  | { readonly kind: 'created'; readonly entry: ProxyEntry }
  | { readonly kind: 'duplicate' }
  | { readonly kind: 'invalid'; readonly reason: string };

export interface PoolListener {
  added?(entry: ProxyEntry): void;
  removed?(entry: ProxyEntry): void;
  /**
   * The entry's record was replaced (PATCH, an exit learned, another instance's change); `before` is the
   * old record and `country` the entry's effective country before (indexes by country move it).
   */
  updated?(entry: ProxyEntry, before: ProxyRecord, country: string | null): void;
}

/**
 * Bumped whenever a member's effective country changes (PATCH, a learned exit country), in any pool of
 * this process: indexes by country (rotation/geo-targeted.ts) rebuild when it moved, without the pool
 * having to know them. Changes are rare; a rebuild is one pass over the members.
 */
export const countryMoves = { count: 0 };
