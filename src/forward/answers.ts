import { proxyStatusOf, type RotaErrorCode, specOf, wireCode } from '../errors/codes.ts';
import { RotaError } from '../errors/rota-error.ts';

/**
 * How the listeners answer when no response or tunnel could be made: a code of the one registry
 * (errors/codes.ts) gives the HTTP listener's status and the SOCKS5 reply, so that the two doors, and
 * the API, never disagree. Every HTTP answer carries `X-Rota-Error: <code>`, RFC 9209's `Proxy-Status`
 * (`rota; error=<type>; details="<code>"`, the type from the registry) and a one-line text body.
 */
export interface Refusal {
  readonly status: number;
  /** The code as clients see it (`X-Rota-Error`). */
  readonly code: string;
  readonly message: string;
  readonly socksReply: number;
  /** The `Proxy-Status` header's value (RFC 9209). */
  readonly proxyStatus: string;
  readonly headers?: Readonly<Record<string, string>>;
}

export function refusal(code: RotaErrorCode, message?: string, headers?: Record<string, string>): Refusal {
  const spec = specOf(code);
  const wire = wireCode(code);
  const base = { status: spec.status, code: wire, message: message ?? spec.message };
  const proxyStatus = `rota; error=${proxyStatusOf(code)}; details="${wire}"`;
  return { ...base, socksReply: spec.socks, proxyStatus, ...(headers ? { headers } : {}) };
}

/**
 * The engine's error (or anything thrown) as a listener's answer. Messages are the engine's, which carry
 * no secret. A target the SSRF rules refuse is the API's 400 `INVALID_URL` (its REST interface says so)
 * and the listeners' 403 `SSRF_BLOCKED`: the one place where a door renders a code as another.
 */
export function refusalOf(err: unknown): Refusal {
  if (!(err instanceof RotaError)) return refusal('INTERNAL_ERROR', 'internal error');
  if (err.code === 'TARGET_FORBIDDEN') return refusal('SSRF_BLOCKED', err.message);
  const retryAfter = err.headers?.['retry-after'];
  return refusal(err.code, err.message, retryAfter ? { 'retry-after': retryAfter } : undefined);
}
