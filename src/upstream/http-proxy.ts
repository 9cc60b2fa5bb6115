/*
 * Dialer for http:// and https:// proxies.
 *
 *   plain-http target, absolute-URI form (no CONNECT):
 *
 *     gateway ──TCP [──TLS, https:// proxy]──▶ proxy ──HTTP──▶ target
 *             GET http://target/path HTTP/1.1
 *             Proxy-Authorization: Basic …          (to the proxy only)
 *
 *   https target, CONNECT tunnel:
 *
 *     gateway ──TCP [──TLS]──▶ proxy ──TCP──▶ target
 *             CONNECT target:443 HTTP/1.1 + Proxy-Authorization
 *             ◀── 200
 *             ══════════ TLS with the target, through the tunnel ══════════▶
 *             GET /path HTTP/1.1                     (the proxy sees only ciphertext)
 *
 * All plain-http targets share one keep-alive pool of connections to the proxy (the requests carry
 * absolute URIs, so one connection can serve any target); each https target origin has its own pool of
 * tunnels. Reaching the proxy, TLS with it and the CONNECT exchange share one connect-timeout budget.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import { OriginCache } from '../lib/origin-cache.ts';
import type { ProxyRecord } from '../pool/types.ts';
import {
  classifyProxyDialError,
  connectStatusError,
  proxyAuthRequired,
  proxyCouldNotReachTarget,
} from './classify.ts';
import {
  assertProxyAllowed,
  authority,
  connectTcp,
  connectTls,
  DialBudget,
  type DialerOptions,
  makeAgent,
  type TargetAddress,
  targetTls,
  toConnector,
} from './dial.ts';
import type { DirectReads } from './direct-reads.ts';
import { UpstreamError } from './types.ts';

const MAX_CONNECT_HEAD = 16 * 1024;

/** `Basic base64(user:pass)`, or null without a username. A username without a password is allowed. */
export function basicAuth(username: string | null, password: string | null): string | null {
  if (username === null) return null;
  return `Basic ${Buffer.from(`${username}:${password ?? ''}`, 'utf8').toString('base64')}`;
}

function protocolError(message: string): UpstreamError {
  return new UpstreamError('proxy_protocol', message, { mayHaveReachedTarget: false });
}

/** Reads the proxy's answer head to CONNECT; bytes after it are put back on the socket. */
function readConnectHead(socket: Duplex, signal: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const cleanup = () => {
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      signal.removeEventListener('abort', onAbort);
    };
    const settle = (err: unknown, status?: number) => {
      cleanup();
      if (err !== null || status === undefined) {
        socket.destroy();
        reject(err);
      } else resolve(status);
    };
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf('\r\n\r\n');
      if (end === -1) {
        if (buf.length > MAX_CONNECT_HEAD) settle(protocolError('the CONNECT answer head is too large'));
        return;
      }
      const m = /^HTTP\/1\.[01] (\d{3})(?: |\r)/.exec(buf.subarray(0, end + 2).toString('latin1'));
      if (!m) return settle(protocolError('the proxy answered CONNECT with something that is not HTTP'));
      socket.pause();
      const rest = buf.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      settle(null, Number(m[1]));
    };
    const onError = (err: Error) => settle(classifyProxyDialError(err, 'connect'));
    const onClose = () => settle(classifyProxyDialError(null, 'connect'));
    const onAbort = () => settle(signal.reason);
    if (signal.aborted) return onAbort();
    socket.on('data', onData);
    socket.once('error', onError);
    socket.once('close', onClose);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Asks the proxy on `socket` for a tunnel to `target`; resolves once it answered 2xx. */
export async function requestTunnel(
  socket: Duplex,
  target: Pick<TargetAddress, 'hostname' | 'port'>,
  auth: string | null,
  signal: AbortSignal,
): Promise<void> {
  const where = authority(target.hostname, target.port);
  const lines = [`CONNECT ${where} HTTP/1.1`, `Host: ${where}`, 'Proxy-Connection: keep-alive'];
  if (auth !== null) lines.push(`Proxy-Authorization: ${auth}`);
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  const status = await readConnectHead(socket, signal);
  if (status < 200 || status > 299) {
    socket.destroy();
    throw connectStatusError(status);
  }
}

/** TCP (or TCP + TLS for https://) to the proxy itself; `reads` for a plain TCP tunnel's socket. */
export async function dialProxy(
  record: ProxyRecord,
  opts: DialerOptions,
  signal: AbortSignal,
  reads?: DirectReads,
) {
  assertProxyAllowed(record.host, opts);
  try {
    if (record.protocol === 'https') return await connectTls(record.host, record.port, opts.tls, signal);
    return await connectTcp(record.host, record.port, signal, reads);
  } catch (err) {
    throw classifyProxyDialError(err, record.protocol === 'https' ? 'proxy_tls' : 'tcp');
  }
}

/**
 * tinyproxy answers wrong credentials with 401 + `WWW-Authenticate: Basic realm="Tinyproxy"` instead of
 * 407. A target's own 401 is its answer and must come back as a response, so only that exact
 * signature (realm and Server header) is taken for the proxy's refusal.
 */
function isTinyproxyRefusal(status: number, headers: IncomingHttpHeaders): boolean {
  if (status !== 401) return false;
  const server = String(headers.server ?? '');
  return (
    server.startsWith('tinyproxy/') && /realm="Tinyproxy"/.test(String(headers['www-authenticate'] ?? ''))
  );
}

/**
 * An error page the proxy wrote itself because it could not reach the target, as opposed to a 5xx the
 * target answered. Recognised only by unambiguous signatures: RFC 9209 `Proxy-Status` with a
 * connect-phase error, Squid's `X-Squid-Error` for a failed connect or lookup, and tinyproxy's own 500
 * ("Unable to connect"; it stamps `Server: tinyproxy/…` only on pages it generates).
 */
const CONNECT_PHASE =
  /\berror=(dns_error|dns_timeout|destination_not_found|destination_unavailable|destination_ip_unroutable|connection_refused|connection_timeout)\b/;

function proxyCouldNotConnect(status: number, headers: IncomingHttpHeaders): boolean {
  if (status < 500 || status > 599) return false;
  if (CONNECT_PHASE.test(String(headers['proxy-status'] ?? ''))) return true;
  if (/^ERR_(CONNECT_FAIL|DNS_FAIL)\b/.test(String(headers['x-squid-error'] ?? ''))) return true;
  return status === 500 && String(headers.server ?? '').startsWith('tinyproxy/');
}

/**
 * A handler wrapper that turns the proxy's own refusals and error pages into failures (absolute-URI
 * form). A class rather than an object of closures: one allocation per request on the GET path.
 */
class GuardedHandler implements Dispatcher.DispatchHandler {
  readonly #h: Dispatcher.DispatchHandler;
  constructor(handler: Dispatcher.DispatchHandler) {
    this.#h = handler;
  }
  onRequestStart(c: Dispatcher.DispatchController, ctx: unknown): void {
    this.#h.onRequestStart?.(c, ctx);
  }
  onRequestUpgrade(
    c: Dispatcher.DispatchController,
    status: number,
    headers: IncomingHttpHeaders,
    socket: Duplex,
  ): void {
    this.#h.onRequestUpgrade?.(c, status, headers, socket);
  }
  onResponseStart(
    c: Dispatcher.DispatchController,
    status: number,
    headers: IncomingHttpHeaders,
    message: string,
  ): void {
    if (status === 407 || isTinyproxyRefusal(status, headers)) c.abort(proxyAuthRequired(status));
    else if (proxyCouldNotConnect(status, headers)) c.abort(proxyCouldNotReachTarget(status));
    else this.#h.onResponseStart?.(c, status, headers, message);
  }
  onResponseData(c: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#h.onResponseData?.(c, chunk);
  }
  onResponseEnd(c: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    this.#h.onResponseEnd?.(c, trailers);
  }
  onResponseError(c: Dispatcher.DispatchController, err: Error): void {
    this.#h.onResponseError?.(c, err);
  }
}

type HeaderMap = Record<string, string | string[]>;

/** Any header shape undici accepts, as a plain object with lower-case names. */
function headerMap(headers: Dispatcher.DispatchOptions['headers']): HeaderMap {
  const out: HeaderMap = {};
  const put = (k: unknown, v: unknown) => {
    if (v === undefined || v === null) return;
    out[String(k).toLowerCase()] = Array.isArray(v) ? v.map(String) : String(v);
  };
  if (headers == null) return out;
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) put(headers[i], headers[i + 1]);
  } else if (Symbol.iterator in headers) {
    for (const [k, v] of headers) put(k, v);
  } else {
    // A plain object (the listener's and POST request's case): no entry arrays.
    const plain = headers as Record<string, unknown>;
    for (const k in plain) put(k, plain[k]);
  }
  return out;
}

/** Rewrites plain-http requests to the absolute-URI form, sent to the proxy's shared origin. */
function absoluteUri(forwardOrigin: string, auth: string | null): Dispatcher.DispatcherComposeInterceptor {
  const origins = new OriginCache();
  return (dispatch) => (opts, handler) => {
    // Read only (protocol, host, origin): a shared parsed URL is safe.
    const origin = origins.get(String(opts.origin));
    if (origin.protocol !== 'http:') return dispatch(opts, handler);
    const headers = headerMap(opts.headers);
    headers.host = origin.host;
    if (auth === null) delete headers['proxy-authorization'];
    else headers['proxy-authorization'] = auth;
    const path = `${origin.origin}${opts.path}`;
    return dispatch({ ...opts, origin: forwardOrigin, path, headers }, new GuardedHandler(handler));
  };
}

export function createHttpProxyDispatcher(record: ProxyRecord, opts: DialerOptions): Dispatcher {
  const auth = basicAuth(record.username, record.password);
  const connect = toConnector(async (target) => {
    const budget = new DialBudget(opts.connectTimeoutMs);
    try {
      const socket = await dialProxy(record, opts, budget.signal);
      // The forward origin below is always http:, so "http:" here means absolute-URI traffic.
      if (target.protocol === 'http:') return socket;
      await requestTunnel(socket, target, auth, budget.signal);
      budget.done();
      return await targetTls(socket, target, opts.tls, opts.connectTimeoutMs);
    } finally {
      budget.done();
    }
  });
  const forwardOrigin = `http://${authority(record.host, record.port)}`;
  return makeAgent(connect, opts).compose(absoluteUri(forwardOrigin, auth));
}
