import type { CallerSignal } from '../lib/abort.ts';

/**
 * Why an attempt through a proxy failed. Each kind blames at most one thing:
 * - the proxy (PROXY_FAULTS: breaker and health count it): failures that do not depend on the target;
 * - the pair (proxy, target host:port) (PAIR_FAULTS: bans/refusals.ts cools the pair down): the proxy
 *   refused or could not reach this one target, which a client chooses, so it must never take the proxy
 *   away from other targets;
 * - nobody: the target's own failures, the caller leaving, and `local` (Rota's own resources or an
 *   internal error).
 */
export type UpstreamErrorKind =
  | 'connect' // TCP connect to the proxy refused / reset / unreachable
  | 'tls' // TLS handshake with an https:// proxy failed
  | 'socks' // SOCKS handshake failed or the SOCKS server refused
  | 'proxy_auth' // 407, or SOCKS authentication refused
  | 'target_refused' // the proxy refused this target by its own rules (a 4xx other than 407 to CONNECT, a SOCKS refusal other than general failure)
  | 'timeout' // deadline reached before the target answered
  | 'target_forbidden' // a socks4/socks5 dialer resolved the target to an address the SSRF rules refuse
  | 'queue_timeout' // deadline reached while the request waited for a connection inside Rota: not the proxy's doing
  | 'proxy_protocol' // the proxy answered garbage
  | 'connection_lost' // the connection through the proxy broke after the request left, before any answer
  | 'target_unreachable' // the proxy says it could not reach the target (e.g. 502 on CONNECT, SOCKS host unreachable)
  | 'target_tls' // TLS with the target (through the tunnel) failed
  | 'response_interrupted' // the target's answer started but its connection broke before the end
  | 'response_timeout' // the target's answer started but its body was still arriving at the deadline
  | 'response_too_large' // the target's answer is over ROTA_MAX_RESPONSE_BYTES
  | 'invalid_request' // the request could not be sent as given (e.g. a header value undici refuses)
  | 'aborted' // the caller went away, or the proxy's dispatcher was closed (proxy deleted)
  | 'local'; // Rota's own failure: out of file descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM), or an internal error

export const PROXY_FAULTS: ReadonlySet<UpstreamErrorKind> = new Set([
  'connect',
  'tls',
  'socks',
  'proxy_auth',
  'timeout',
  'proxy_protocol',
  'connection_lost',
]);

/** Failures about one target through one proxy: they cool the pair down, never the proxy. */
export const PAIR_FAULTS: ReadonlySet<UpstreamErrorKind> = new Set(['target_refused', 'target_unreachable']);

export class UpstreamError extends Error {
  readonly code = 'UPSTREAM_ERROR';
  readonly kind: UpstreamErrorKind;
  /** False only when the request certainly never left the gateway (safe to replay POST/PATCH). */
  readonly mayHaveReachedTarget: boolean;
  /**
   * The connection broke on a kept-alive connection that had carried an earlier answer: most likely the
   * proxy closed it as it sat idle, before reading this request (works.ts sends it once more).
   */
  readonly onReusedConnection: boolean;
  constructor(
    kind: UpstreamErrorKind,
    message: string,
    opts: { mayHaveReachedTarget: boolean; cause?: unknown; onReusedConnection?: boolean },
  ) {
    super(message, { cause: opts.cause });
    this.name = 'UpstreamError';
    this.kind = kind;
    this.mayHaveReachedTarget = opts.mayHaveReachedTarget;
    this.onReusedConnection = opts.onReusedConnection ?? false;
  }

  get proxyFault(): boolean {
    return PROXY_FAULTS.has(this.kind);
  }

  get pairFault(): boolean {
    return PAIR_FAULTS.has(this.kind);
  }
}

export interface UpstreamRequest {
  readonly url: URL;
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer | null;
  /** Absolute deadline (performance.now() ms). */
  readonly deadline: number;
  readonly maxResponseBytes: number;
  readonly signal?: CallerSignal;
  /** Called when the target's answer starts (status and headers are in). */
  readonly onResponseStart?: () => void;
}

/** TLS trust used both for https:// proxies and for https targets (tests pass their own CA). */
export interface UpstreamTlsOptions {
  readonly ca?: string | Buffer | Array<string | Buffer>;
  readonly rejectUnauthorized?: boolean;
}

export interface UpstreamResponse {
  readonly statusCode: number;
  readonly headers: Record<string, string | string[]>;
  readonly body: Buffer;
}
