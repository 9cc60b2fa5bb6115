import type { StrategyName } from '../config.ts';
import type { ProxyEntry } from '../pool/pool.ts';

/** What a caller asks of one selection. */
export interface SelectionRequest {
  /** Proxy ids already tried by this call: never returned (null when every eligible one is excluded). */
  readonly exclude?: ReadonlySet<string>;
  /** The sticky key: the Selector's session table pins it, under every strategy (sessions.ts). */
  readonly sessionId?: string | undefined;
  /** geo-targeted: ISO 3166 alpha-2, upper case (a preference of that strategy). */
  readonly country?: string | undefined;
  /** A hard filter (the listeners' `country`): only members of this country are eligible. */
  readonly onlyCountry?: string | undefined;
  /** The target's host: members cooling down for it (bans/) are not eligible. */
  readonly host?: string | undefined;
  /** The target's port: members cooling down for host:port (a proxy's refusal of it) are not eligible. */
  readonly port?: number | undefined;
  /** When every otherwise eligible member is cooling down for `host`, the one whose cool-down ends first. */
  readonly coolingFallback?: boolean | undefined;
}

/** The outcome of an attempt through a proxy, as strategies learn from it. */
export interface AttemptOutcome {
  readonly ok: boolean;
  readonly latencyMs: number;
  /** true when the failure was the proxy's fault (docs/decisions.md, "Proxies and health"). */
  readonly proxyFault: boolean;
}

/**
 * The view of the pool a strategy selects from. `members` is in creation order and shared (do not
 * mutate). `eligible(e)` says whether a member may be chosen now (breaker admits it and it is not
 * excluded); it is cheap but not free, so strategies call it only on the members they consider.
 */
export interface Candidates {
  readonly members: readonly ProxyEntry[];
  eligible(e: ProxyEntry): boolean;
}

/**
 * One rotation strategy. Implementations live one per file in this folder and all pass
 * `contract.test.ts`. Selection must not mutate the pool; it may keep its own state (cursor, pins,
 * latency estimates). Round-robin, random and least-used must select in better than O(n) per call
 * when most members are eligible.
 */
export interface Strategy {
  readonly name: StrategyName;
  select(c: Candidates, req: SelectionRequest): ProxyEntry | null;
  /** Called after every real attempt (not after GET rotate). */
  record?(e: ProxyEntry, outcome: AttemptOutcome): void;
  /** Called when in-flight count of a member changes (least-used keeps an index on it). */
  inFlightChanged?(e: ProxyEntry): void;
  /** Pool membership changes, so that indexes and pins stay right. */
  added?(e: ProxyEntry): void;
  removed?(e: ProxyEntry): void;
}
