import type { TargetAnswer } from '../bans/detect.ts';
import type { CallerSignal } from '../lib/abort.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import type { ProxyRecord } from '../pool/types.ts';

/**
 * One kind of attempt through one proxy. The executor (executor.ts) owns selection, permits, failover,
 * deadlines, hedging and accounting; a Work only knows how to get its answer through a given proxy:
 *
 *   Executor ──▶ Work.run(proxy, deadline) ──▶ R          (or an UpstreamError with its kind)
 *                  ├─ buffered request   POST request: the whole answer in memory, capped
 *                  ├─ streamed request   listener absolute-URI: head now, body streamed on
 *                  └─ tunnel             CONNECT / SOCKS5: a socket connected to the target
 *
 * Only the error's kind decides whether a proxy is blamed, so each door gets the same breakers, health,
 * strategy records and metrics.
 */

/** Where one attempt runs and by when. */
export interface AttemptRun {
  readonly entry: ProxyEntry;
  /** What to dial with: the entry's record, or for a gateway the copy with this attempt's credentials. */
  readonly record: ProxyRecord;
  /** Monotonic ms by which the answer (its head, for a stream; the connection, for a tunnel) is due. */
  readonly deadline: number;
  readonly signal?: CallerSignal | undefined;
  /** Told when the target's answer starts: an answer already arriving is not hedged. */
  readonly onResponseStart?: (() => void) | undefined;
}

/**
 * Whether the request may be sent again after it may have reached the target.
 * - `by-method`: the idempotent methods, or any with the retry policy's `retry_non_idempotent`;
 * - `always`: nothing reaches the target before the attempt succeeds (a tunnel);
 * - `never`: the request cannot be rebuilt (a body already streamed from the client).
 * A failure that certainly never left Rota is retried in every case.
 */
export type Replay = 'by-method' | 'always' | 'never';

export interface Work<R> {
  /** The HTTP method (`CONNECT` for a tunnel): replay and hedge rules. */
  readonly method: string;
  readonly replay: Replay;
  run(a: AttemptRun): Promise<R>;
  /**
   * The target's answer in `r`, for the retry policy's `retry_status_codes` and for ban detection; null
   * when it is not an HTTP answer (a tunnel). `body` is null when it is not in memory (streamed).
   */
  answer(r: R): TargetAnswer | null;
  /** `r` will not reach the caller (a later answer won, or the caller left): free what it holds. */
  discard(r: R): void;
}
