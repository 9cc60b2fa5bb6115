import { UpstreamError, type UpstreamErrorKind } from './types.ts';

/**
 * Turning low-level failures into UpstreamError kinds.
 *
 * Two moments matter. While a connection is being built (TCP, TLS with the proxy, CONNECT or SOCKS
 * handshake, TLS with the target through the tunnel) nothing of the request has left the gateway, so
 * every error then has `mayHaveReachedTarget: false` and a replay is safe. Once undici has started
 * writing the request, anything may have reached the target.
 *
 * Who is blamed (types.ts says what each kind counts against):
 * - CONNECT answered 407 (or 401, tinyproxy's answer to wrong credentials) → `proxy_auth` (the proxy's);
 *   5xx → `target_unreachable` (the proxy says it could not reach the target: tinyproxy answers 500
 *   "Unable to connect", squid 503, others 502/504); any other non-2xx → `target_refused` (the proxy's
 *   rules refuse this target: stock squid answers 403 to CONNECT on any port but 443). Both are about the
 *   pair (proxy, target), never the proxy alone: a client picks its targets, so counting them against the
 *   proxy would let one client open every breaker.
 * - SOCKS5 replies 3/4/5/6 (network/host unreachable, refused, TTL) and SOCKS4 reply 91 ("rejected or
 *   failed", what dante answers when the target refuses) → `target_unreachable`; SOCKS5 replies 2/7/8
 *   (not allowed by the rule set, command or address type not supported) → `target_refused`; general
 *   failure (1) and malformed handshakes → `socks` (the proxy's); refused credentials → `proxy_auth`.
 * - EMFILE, ENFILE, ENOBUFS, ENOMEM at any stage → `local`: Rota ran out of its own resources.
 * - The connection breaking after the request left but before any answer → `connection_lost` (proxy
 *   fault); after the answer started → `response_interrupted` (not a proxy fault: the target answered).
 * - An HTTP parse error before the answer → `proxy_protocol`. Through a tunnel that could in theory be
 *   the target's garbage; we do not try to tell the two apart.
 *
 * Messages are written here from error codes, never copied from errors that may carry options (the
 * `socks` package keeps the proxy password on its error object), so no credential can leak.
 */

interface Coded {
  readonly code?: unknown;
  readonly message?: unknown;
  readonly name?: unknown;
}

function codeOf(err: unknown): string {
  const c = (err as Coded | null)?.code;
  return typeof c === 'string' ? c : '';
}

function messageOf(err: unknown): string {
  const m = (err as Coded | null)?.message;
  return typeof m === 'string' ? m : String(err);
}

/**
 * A cause that keeps name, code and message only: never an object that holds options or sockets. The
 * messages come from Node, undici or `socks` about hosts and ports we built without credentials.
 */
export function safeCause(err: unknown): Error {
  const e = new Error(messageOf(err));
  const name = (err as Coded | null)?.name;
  if (typeof name === 'string') e.name = name;
  const code = codeOf(err);
  if (code) Object.defineProperty(e, 'code', { value: code, enumerable: true });
  return e;
}

function fail(kind: UpstreamErrorKind, message: string, reached: boolean, cause?: unknown): UpstreamError {
  return new UpstreamError(kind, message, {
    mayHaveReachedTarget: reached,
    cause: cause === undefined ? undefined : safeCause(cause),
  });
}

/** Errors of Rota's own resources, not of any proxy or target. */
const LOCAL_CODES: ReadonlySet<string> = new Set(['EMFILE', 'ENFILE', 'ENOBUFS', 'ENOMEM']);

/** The `local` error for `err` when it is one of Rota's own resources running out; else null. */
function localError(err: unknown, code = codeOf(err)): UpstreamError | null {
  if (!LOCAL_CODES.has(code)) return null;
  return fail('local', `Rota is out of a local resource (${code})`, false, err);
}

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|ERR_OSSL_|HOSTNAME_)/;

/** True for errors raised by a TLS handshake (certificate, protocol, alert). */
export function isTlsError(err: unknown): boolean {
  return TLS_CODE.test(codeOf(err));
}

/** Failure while reaching the proxy itself: TCP connect, TLS with an https:// proxy, reading a CONNECT answer. */
export function classifyProxyDialError(err: unknown, stage: 'tcp' | 'proxy_tls' | 'connect'): UpstreamError {
  if (err instanceof UpstreamError) return err;
  const code = codeOf(err);
  const local = localError(err, code);
  if (local) return local;
  if (stage === 'proxy_tls' && isTlsError(err)) {
    return fail('tls', `TLS handshake with the proxy failed (${code || 'handshake error'})`, false, err);
  }
  const what =
    stage === 'connect' ? 'the proxy closed the connection during CONNECT' : 'could not connect to the proxy';
  return fail('connect', `${what} (${code || 'socket closed'})`, false, err);
}

/** Failure of the TLS handshake with the target, inside an established tunnel. */
export function classifyTargetTlsError(err: unknown): UpstreamError {
  if (err instanceof UpstreamError) return err;
  const code = codeOf(err);
  const local = localError(err, code);
  if (local) return local;
  if (isTlsError(err))
    return fail('target_tls', `TLS handshake with the target failed (${code})`, false, err);
  // The tunnel was up, so a socket error now is the proxy or the target hanging up mid-handshake.
  return fail(
    'target_tls',
    `the tunnel closed during the TLS handshake with the target (${code || 'closed'})`,
    false,
    err,
  );
}

/** A non-2xx answer to CONNECT. */
export function connectStatusError(status: number): UpstreamError {
  // tinyproxy answers 401 (not 407) when credentials were sent but are wrong.
  if (status === 407 || status === 401) {
    return fail('proxy_auth', `the proxy refused the credentials (${status} on CONNECT)`, false);
  }
  if (status >= 500 && status <= 599) {
    return fail('target_unreachable', `the proxy could not reach the target (${status} on CONNECT)`, false);
  }
  return fail('target_refused', `the proxy refused the target (${status} on CONNECT)`, false);
}

/** A 407 answered by an HTTP proxy to an absolute-URI request: it did not forward the request. */
export function proxyAuthRequired(status = 407): UpstreamError {
  return fail('proxy_auth', `the proxy refused the credentials (${status})`, false);
}

/** The proxy's own error page for an absolute-URI request: it could not connect to the target. */
export function proxyCouldNotReachTarget(status: number): UpstreamError {
  return fail('target_unreachable', `the proxy could not reach the target (${status})`, false);
}

/** The proxy's own refusal of an absolute-URI request, by its rules, for this target (absolute-form.ts). */
export function proxyRefusedTheTarget(status: number): UpstreamError {
  return fail('target_refused', `the proxy refused the target (${status})`, false);
}

/** A timeout while reaching the proxy (TCP, TLS, CONNECT or SOCKS handshake). */
export function dialTimeout(ms: number): UpstreamError {
  return fail(
    'timeout',
    `timed out reaching the proxy after ${ms} ms (TCP, TLS, CONNECT or SOCKS handshake)`,
    false,
  );
}

const SOCKS5_TARGET =
  /rejected connection - (NetworkUnreachable|HostUnreachable|ConnectionRefused|TTLExpired)/;
const SOCKS5_REFUSED = /rejected connection - (NotAllowed|CommandNotSupported|AddressNotSupported)/;

/** Errors from the `socks` package's SocksClient (it reports everything as a message string). */
export function classifySocksError(err: unknown, timeoutMs: number): UpstreamError {
  if (err instanceof UpstreamError) return err;
  const msg = messageOf(err);
  if (msg.includes('Proxy connection timed out')) return dialTimeout(timeoutMs);
  if (/Authentication failed|no accepted authentication type|RejectedIdent/.test(msg)) {
    return fail('proxy_auth', 'the SOCKS proxy refused the credentials', false);
  }
  const s5 = SOCKS5_TARGET.exec(msg);
  if (s5) return fail('target_unreachable', `the SOCKS proxy could not reach the target (${s5[1]})`, false);
  const refused = SOCKS5_REFUSED.exec(msg);
  if (refused) return fail('target_refused', `the SOCKS proxy refused the target (${refused[1]})`, false);
  if (msg.includes('Socks4 Proxy rejected connection - (Failed)')) {
    return fail('target_unreachable', 'the SOCKS proxy could not reach the target (request failed)', false);
  }
  const net = /\b(E[A-Z]{3,})\b/.exec(msg);
  const local = localError(err, net?.[1] ?? codeOf(err));
  if (local) return local;
  if (net) return fail('connect', `could not connect to the SOCKS proxy (${net[1]})`, false);
  const reason = /rejected connection - \(?([A-Za-z]+)\)?/.exec(msg)?.[1];
  if (reason) return fail('socks', `the SOCKS proxy refused the connection (${reason})`, false);
  if (msg.includes('Socket closed'))
    return fail('socks', 'the SOCKS proxy closed the connection during the handshake', false);
  return fail('socks', 'the SOCKS handshake failed (unexpected answer)', false);
}

/** Where an attempt was when it failed, as seen by send(). */
export type AttemptPhase = 'queued' | 'sent' | 'receiving';

/** Errors that reach send()'s handler from undici (or from a dialer, already classified). */
export function classifySendError(err: unknown, phase: AttemptPhase): UpstreamError {
  if (err instanceof UpstreamError) return err;
  const code = codeOf(err);
  const local = localError(err, code);
  if (local) return local;
  const reached = phase !== 'queued';
  if (code === 'UND_ERR_INVALID_ARG' || code === 'UND_ERR_NOT_SUPPORTED' || code.startsWith('ERR_INVALID')) {
    return fail(
      'invalid_request',
      'the request could not be sent as given (invalid header or body)',
      false,
      err,
    );
  }
  if (code === 'UND_ERR_DESTROYED' || code === 'UND_ERR_CLOSED') {
    return fail('aborted', 'the proxy was removed while the request was in progress', reached, err);
  }
  if (phase === 'receiving') {
    if (code === 'UND_ERR_BODY_TIMEOUT')
      return fail('response_timeout', 'the response body stalled', true, err);
    return fail(
      'response_interrupted',
      `the response broke off before its end (${code || 'error'})`,
      true,
      err,
    );
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT')
    return fail('timeout', 'no answer before the headers timeout', reached, err);
  if (
    code.startsWith('HPE_') ||
    code === 'UND_ERR_HEADERS_OVERFLOW' ||
    (err as Coded | null)?.name === 'HTTPParserError'
  ) {
    return fail('proxy_protocol', `the answer was not valid HTTP (${code || 'parse error'})`, reached, err);
  }
  if (!reached) {
    return fail('connect', `could not open a connection through the proxy (${code || 'error'})`, false, err);
  }
  // undici's SocketError carries the socket's counters: bytes read before this request mean the
  // connection had already carried an answer (kept alive), so the proxy most likely closed it idle.
  // A socket error is tagged by the dialer (dial.ts markReuse) when the socket had read before.
  const e = err as { socket?: { bytesRead?: unknown }; onReusedConnection?: unknown } | null;
  const bytesRead = e?.socket?.bytesRead;
  return new UpstreamError('connection_lost', `the connection broke before any answer (${code || 'error'})`, {
    mayHaveReachedTarget: true,
    cause: safeCause(err),
    onReusedConnection: (typeof bytesRead === 'number' && bytesRead > 0) || e?.onReusedConnection === true,
  });
}
