import { ApiError } from '../http/errors.ts';
import { REPLY } from './socks5-protocol.ts';

/**
 * How the listeners answer when no response or tunnel could be made (docs/decisions.md,
 * "Listeners"): one registry from an error code to the HTTP listener's status and the SOCKS5 reply, so that
 * the two doors never disagree. Every answer carries `X-Rota-Error: <code>` and a one-line text body.
 */
export interface Refusal {
  readonly status: number;
  readonly code: string;
  readonly message: string;
  readonly socksReply: number;
  readonly headers?: Readonly<Record<string, string>>;
}

const BY_CODE: Readonly<Record<string, Omit<Refusal, 'message' | 'code' | 'headers'>>> = {
  SSRF_BLOCKED: { status: 403, socksReply: REPLY.NOT_ALLOWED },
  PROXY_FAILOVER_EXHAUSTED: { status: 502, socksReply: REPLY.HOST_UNREACHABLE },
  PROXY_ERROR: { status: 502, socksReply: REPLY.GENERAL_FAILURE },
  REQUEST_FAILED: { status: 502, socksReply: REPLY.GENERAL_FAILURE },
  TARGET_UNREACHABLE: { status: 504, socksReply: REPLY.HOST_UNREACHABLE },
  PROXY_POOL_EMPTY: { status: 503, socksReply: REPLY.GENERAL_FAILURE },
  REQUEST_TIMEOUT: { status: 504, socksReply: REPLY.TTL_EXPIRED },
  INVALID_PROXY_PARAMS: { status: 400, socksReply: REPLY.GENERAL_FAILURE },
  BAD_REQUEST: { status: 400, socksReply: REPLY.GENERAL_FAILURE },
  PROXY_AUTH_REQUIRED: { status: 407, socksReply: REPLY.GENERAL_FAILURE },
  RATE_LIMIT_EXCEEDED: { status: 429, socksReply: REPLY.GENERAL_FAILURE },
  INTERNAL_ERROR: { status: 500, socksReply: REPLY.GENERAL_FAILURE },
  TOO_MANY_CONNECTIONS: { status: 503, socksReply: REPLY.GENERAL_FAILURE },
  SERVICE_UNAVAILABLE: { status: 503, socksReply: REPLY.GENERAL_FAILURE },
};

export type RefusalCode = keyof typeof BY_CODE;

export function refusal(code: RefusalCode, message: string, headers?: Record<string, string>): Refusal {
  const known = BY_CODE[code] ?? { status: 500, socksReply: REPLY.GENERAL_FAILURE };
  return { ...known, code, message, ...(headers ? { headers } : {}) };
}

/** The engine's error (or anything thrown) as a listener's answer. Messages are the engine's, which carry no secret. */
export function refusalOf(err: unknown): Refusal {
  if (!(err instanceof ApiError)) return refusal('INTERNAL_ERROR', 'internal error');
  if (err.code === 'INVALID_URL') return refusal('SSRF_BLOCKED', err.message);
  if (err.code in BY_CODE) {
    const retryAfter = err.headers?.['retry-after'];
    return refusal(err.code, err.message, retryAfter ? { 'retry-after': retryAfter } : undefined);
  }
  return refusal('INTERNAL_ERROR', 'internal error');
}
