/*
 * The absolute-URI form through an http:// or https:// proxy: how a plain-http target is reached.
 *
 *   stream() / send() ──dispatch({origin: http://site, path: /p})──▶ HttpProxyDispatcher
 *        │ http: target                                       │ https: target
 *        ▼                                                    ▼
 *   Pool to the proxy (one per proxy, keep-alive)        Agent: a pool of CONNECT tunnels per origin
 *     GET http://site/p HTTP/1.1                           (http-proxy.ts dials them)
 *     Host: site
 *     Proxy-Authorization: <the proxy's own credentials>
 *        │
 *   GuardedHandler: the proxy's own refusals (407, tinyproxy's 401) and error pages ("could not
 *   connect") become failures of the attempt; the target's answers pass through.
 *
 * Why a class and not undici's compose() with an interceptor on one Agent: that path cost a JS Proxy
 * (compose), the Agent's lookup of a pool by origin, and a bound dispatch per request, on every request
 * of the listener's hottest path; here one branch picks the Pool and one dispatch reaches it.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import { OriginCache, ParsedOrigin } from '../lib/origin-cache.ts';
import type { Agent, Pool } from '../runtime/undici-agent.ts';
import { proxyAuthRequired, proxyCouldNotReachTarget, proxyRefusedTheTarget } from './classify.ts';
import { agentBusy, type ProxyDispatcher, poolBusy } from './proxy-dispatcher.ts';

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
 * A refusal the proxy wrote itself, by its own rules, of this one target (not its credentials): Squid's
 * `X-Squid-Error: ERR_ACCESS_DENIED` (stock squid refuses ports outside its Safe_ports), or RFC 9209
 * `Proxy-Status` with an error that says the proxy refused the request or its destination. A target's own
 * 403 carries neither and stays the target's answer (a ban, when the ban policy says so).
 */
const REFUSED_PHASE = /\berror=(http_request_denied|destination_ip_prohibited)\b/;

function proxyRefusedTarget(status: number, headers: IncomingHttpHeaders): boolean {
  if (status < 400 || status > 499) return false;
  if (/^ERR_ACCESS_DENIED\b/.test(String(headers['x-squid-error'] ?? ''))) return true;
  return REFUSED_PHASE.test(String(headers['proxy-status'] ?? ''));
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
    else if (proxyRefusedTarget(status, headers)) c.abort(proxyRefusedTheTarget(status));
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

/** Host or Proxy-Authorization, in any case: the dispatcher writes its own. */
function replaced(name: string): boolean {
  const n = name.length;
  if (n !== 4 && n !== 19) return false;
  const lower = name.toLowerCase();
  return lower === 'host' || lower === 'proxy-authorization';
}

/**
 * The request's headers as name/value pairs in their order and spelling (undici writes them so), after
 * the target's Host (head-order.ts moves it to the client's Host slot) and before the proxy's own
 * credentials. An array from the doors (forwarded-headers.ts); other shapes are read in their order.
 */
function headerList(headers: Dispatcher.DispatchOptions['headers'], host: string, auth: string | null) {
  const out: string[] = ['host', host];
  if (Array.isArray(headers)) {
    // The doors' case, on every request of the listener: no closure, no entry arrays.
    for (let i = 0; i + 1 < headers.length; i += 2) {
      const name = headers[i] as string;
      if (!replaced(name)) out.push(name, headers[i + 1] as string);
    }
  } else if (headers != null && Symbol.iterator in headers) {
    for (const [k, v] of headers) put(out, k, v);
  } else if (headers != null) {
    const plain = headers as Record<string, unknown>;
    for (const k in plain) put(out, k, plain[k]);
  }
  if (auth !== null) out.push('proxy-authorization', auth);
  return out;
}

function put(out: string[], name: string, v: unknown): void {
  if (v === undefined || v === null || replaced(name)) return;
  if (!Array.isArray(v)) out.push(name, String(v));
  else for (const one of v) out.push(name, String(one));
}

/**
 * One http:// or https:// proxy's dispatcher: plain-http requests in the absolute-URI form on one shared
 * Pool of connections to the proxy, everything else through CONNECT tunnels (an Agent made on first use:
 * a proxy only ever asked for http targets never holds one).
 */
export class HttpProxyDispatcher implements ProxyDispatcher {
  readonly #forward: Pool;
  readonly #makeTunnels: () => Agent;
  #tunnels: Agent | null = null;
  readonly #auth: string | null;
  readonly #origins = new OriginCache();

  constructor(forward: Pool, makeTunnels: () => Agent, auth: string | null) {
    this.#forward = forward;
    this.#makeTunnels = makeTunnels;
    this.#auth = auth;
  }

  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    // Read only (protocol, host, origin): a shared parsed URL is safe. The listener hands over the one
    // it parsed (forward/target.ts); other callers give a string.
    const given = opts.origin;
    const origin = given instanceof ParsedOrigin ? given : this.#origins.get(String(given));
    if (origin.protocol !== 'http:') {
      this.#tunnels ??= this.#makeTunnels();
      return this.#tunnels.dispatch(opts, handler);
    }
    const headers = headerList(opts.headers, origin.hostPort, this.#auth);
    const path = `${origin.text}${opts.path}`;
    return this.#forward.dispatch({ ...opts, path, headers }, new GuardedHandler(handler));
  }

  busy(): boolean {
    return poolBusy(this.#forward) || (this.#tunnels !== null && agentBusy(this.#tunnels));
  }

  async destroy(): Promise<void> {
    await Promise.all([this.#forward.destroy(), this.#tunnels?.destroy()]);
  }
}
