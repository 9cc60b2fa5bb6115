/**
 * What one instance tells the others (docs/decisions.md, "Shared state"). Each notice is small and
 * idempotent: applying it twice, or after a newer one of the same subject, changes nothing wrong.
 */
export type Notice =
  /** A breaker opened or closed (half-open follows from the open time, on every instance alike). */
  | {
      readonly type: 'breaker';
      readonly id: string;
      readonly to: 'open' | 'closed';
      readonly at: number;
      readonly failures: number;
    }
  /** A session (its table key: the id, and the host of a `scope: host` pin) was pinned to a proxy. */
  | { readonly type: 'session'; readonly sid: string; readonly proxyId: string; readonly idleMs?: number }
  /** A ban moved the provider session of (Rota session, gateway) `key` to generation `gen`. */
  | { readonly type: 'provider-session'; readonly key: string; readonly gen: number }
  /** Every pin of session `id` was ended (DELETE sessions/{id}). */
  | { readonly type: 'session-ended'; readonly id: string }
  /** A (proxy, host) pair cools down until `until` (epoch ms). */
  | {
      readonly type: 'ban';
      readonly proxyId: string;
      readonly host: string;
      readonly until: number;
      readonly count: number;
    }
  /** The cool-downs of a host (all hosts: null) were cleared. */
  | { readonly type: 'bans-cleared'; readonly host: string | null }
  /** A proxy was added to, changed in (PATCH, a learned exit) or removed from the shared store. */
  | { readonly type: 'pool'; readonly op: 'added' | 'updated' | 'removed'; readonly id: string }
  /** Runtime settings (config, retry or ban policy, inspected hosts) changed in the shared store. */
  | { readonly type: 'settings' }
  /** This instance's traffic figures, and the proxies whose shared counters it just moved. */
  | { readonly type: 'stats'; readonly snapshot: InstanceStats; readonly ids: readonly string[] };

export interface InstanceStats {
  readonly calls: number;
  readonly failed: number;
  readonly latencySumMs: number;
  readonly rps: number;
}

export interface Envelope {
  /** The sending instance: an instance ignores its own notices. */
  readonly from: string;
  readonly notice: Notice;
}

export type NoticeHandler = (notice: Notice, from: string) => void;
