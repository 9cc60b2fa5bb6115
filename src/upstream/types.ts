/**
 * Why an attempt through a proxy failed. `proxy_fault` kinds count against the proxy (breaker, health);
 * the others do not (DECISIONS "Proxies": only proxy faults count).
 */
export type UpstreamErrorKind =
  | 'connect' // TCP connect to the proxy refused / reset / unreachable
  | 'tls' // TLS handshake with an https:// proxy failed
  | 'socks' // SOCKS handshake failed or the SOCKS server refused
  | 'proxy_auth' // 407, or SOCKS authentication refused
  | 'tunnel_refused' // CONNECT answered with a non-2xx status other than 407
  | 'timeout' // deadline reached before the target answered
  | 'proxy_protocol' // the proxy answered garbage
  | 'target_unreachable' // the proxy says it could not reach the target (e.g. 502 on CONNECT, SOCKS host unreachable)
  | 'target_tls' // TLS with the target (through the tunnel) failed
  | 'response_too_large' // the target's answer is over ROTA_MAX_RESPONSE_BYTES
  | 'aborted'; // the caller went away

export const PROXY_FAULTS: ReadonlySet<UpstreamErrorKind> = new Set([
  'connect',
  'tls',
  'socks',
  'proxy_auth',
  'tunnel_refused',
  'timeout',
  'proxy_protocol',
]);

export class UpstreamError extends Error {
  readonly code = 'UPSTREAM_ERROR';
  readonly kind: UpstreamErrorKind;
  /** False only when the request certainly never left the gateway (safe to replay POST/PATCH). */
  readonly mayHaveReachedTarget: boolean;
  constructor(kind: UpstreamErrorKind, message: string, opts: { mayHaveReachedTarget: boolean; cause?: unknown }) {
    super(message, { cause: opts.cause });
    this.name = 'UpstreamError';
    this.kind = kind;
    this.mayHaveReachedTarget = opts.mayHaveReachedTarget;
  }

  get proxyFault(): boolean {
    return PROXY_FAULTS.has(this.kind);
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
  readonly signal?: AbortSignal;
}

export interface UpstreamResponse {
  readonly statusCode: number;
  readonly headers: Record<string, string | string[]>;
  readonly body: Buffer;
}
