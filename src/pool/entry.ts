/**
 * What the pool hands out and takes in: a member's entry (its record and the state that lives only in
 * this process), the input of an add, the outcome of a bulk add, and the listener of changes. Kept apart
 * from the Pool class so that readers of entries (selection, breakers, stats, the listeners) need not
 * load the pool's logic to name its types.
 */
import type { Health, ProxyRecord } from './types.ts';

export interface ProxyStats {
  total: number;
  success: number;
  failed: number;
  latencySumMs: number;
}

/** A pool member: the persisted record plus state that lives only in this process. */
export interface ProxyEntry {
  readonly record: ProxyRecord;
  readonly url: string;
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
}

/** What became of one input of `addMany`, in input order. */
export type BulkOutcome =
  | { readonly kind: 'created'; readonly entry: ProxyEntry }
  | { readonly kind: 'duplicate' }
  | { readonly kind: 'invalid'; readonly reason: string };

export interface PoolListener {
  added?(entry: ProxyEntry): void;
  removed?(entry: ProxyEntry): void;
}
