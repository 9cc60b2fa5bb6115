import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { STATUS_CODES } from '../runtime/node-http.ts';
import { isRotaHeader, HOP_BY_HOP as UPSTREAM_HOP_BY_HOP } from '../upstream/send.ts';
import { type Refusal, refusal } from './answers.ts';
import type { ForwardGateway } from './gateway.ts';
import type { IdleSweeper } from './idle-sweep.ts';
import type { InspectHook } from './inspect.ts';
import { basicCredentials, type ListenerAuth, type Verdict } from './listener-auth.ts';
import type { ForwardMetrics } from './metrics.ts';
import { mergeHeaders, type ProxyParams, parseUsername } from './params.ts';

/**
 * The door shared by the HTTP listener's two paths (absolute.ts, connect.ts): who is asking, may they
 * pass, with which parameters, and how a refusal is written. Auth is checked before parameters, so a
 * stranger learns nothing about them (407 before 400).
 */

/** The raw client sockets a listener holds outside node:http (CONNECT, SOCKS5), for a clean stop. */
export interface SocketRegistry {
  add(socket: Duplex): void;
  delete(socket: Duplex): void;
}

export interface HttpDoorDeps {
  readonly gateway: ForwardGateway;
  readonly auth: ListenerAuth;
  readonly metrics: ForwardMetrics;
  /** Closes tunnels idle for ROTA_TUNNEL_IDLE_TIMEOUT_S; its idleMs is also the connections' timeout. */
  readonly idle: IdleSweeper;
  readonly sockets: SocketRegistry;
  /** HTTPS inspection (forward/inspect.ts); absent: every tunnel is a plain one. */
  readonly inspect?: InspectHook | undefined;
}

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

export type Admission = { ok: true; params: ProxyParams } | { ok: false; refusal: Refusal };

/** A request with nothing to check and nothing to parse (auth off, no credentials, no X-Rota-*). */
const OPEN: Admission = Object.freeze({ ok: true, params: Object.freeze({ label: '' }) });

/**
 * The client's parameters, or the refusal to answer with; at once (no promise) when auth is off, the
 * common case on every request and tunnel, and without any object made when there is nothing to read.
 */
export function admit(auth: ListenerAuth, req: IncomingMessage): Admission | Promise<Admission> {
  const h = req.headers;
  if (
    !auth.required &&
    !auth.challenges &&
    h['proxy-authorization'] === undefined &&
    h['x-rota-session'] === undefined &&
    h['x-rota-country'] === undefined
  )
    return OPEN;
  const creds = basicCredentials(one(req.headers['proxy-authorization']));
  const verdict = auth.check({
    listener: 'http',
    clientIp: () => req.socket.remoteAddress ?? '',
    method: req.method ?? '',
    password: creds?.password ?? null,
  });
  return verdict instanceof Promise
    ? verdict.then((v) => admission(v, creds?.username ?? null, req))
    : admission(verdict, creds?.username ?? null, req);
}

function admission(verdict: Verdict, username: string | null, req: IncomingMessage): Admission {
  if (verdict.type === 'refused') {
    const headers = { 'proxy-authenticate': 'Basic realm="rota"' };
    return { ok: false, refusal: refusal('PROXY_AUTH_REQUIRED', 'Proxy authentication required', headers) };
  }
  if (verdict.type === 'limited') {
    const headers = { 'retry-after': String(verdict.retryAfterS) };
    return { ok: false, refusal: refusal('RATE_LIMIT_EXCEEDED', 'Too many refused attempts', headers) };
  }
  const fromUser = parseUsername(username);
  const merged = fromUser.ok
    ? mergeHeaders(fromUser.params, {
        session: one(req.headers['x-rota-session']),
        country: one(req.headers['x-rota-country']),
      })
    : fromUser;
  if (!merged.ok)
    return {
      ok: false,
      refusal: refusal('INVALID_PROXY_PARAMS', `Invalid proxy parameters: ${merged.reason}`),
    };
  return { ok: true, params: merged.params };
}

/** Never forwarded: hop-by-hop (RFC 9110 7.6.1), the client's proxy credentials, Rota's own parameters. */
const HOP_BY_HOP = new Set([...UPSTREAM_HOP_BY_HOP, 'x-rota-session', 'x-rota-country']);

/**
 * The header names a Connection header lists (they end at this hop too), or null when it lists none that
 * could be present: the usual `keep-alive` (itself hop-by-hop) or `close` (no header of that name), which
 * every keep-alive client sends on every request, need no split.
 */
function connectionListed(headers: IncomingHttpHeaders): string[] | null {
  const conn = one(headers.connection);
  if (conn === undefined) return null;
  const lower = conn.toLowerCase();
  if (lower === 'keep-alive' || (lower === 'close' && headers.close === undefined)) return null;
  return lower.split(',').map((n) => n.trim());
}

/**
 * `headers` without hop-by-hop ones, those named in Connection, X-Rota-* (the client's parameters one way,
 * a target's or upstream proxy's imitation of Rota's answers the other), and `drop`. Called on the
 * answer's headers of every proxied request (the request's go on as the client wrote them:
 * upstream/forwarded-headers.ts): no Set or entry arrays built per call (a profile of the
 * absolute-URI path had the earlier version at ~2 µs per request); `drop` and Connection's list are a
 * handful of names, for which includes() is the cheapest lookup.
 */
export function endToEnd(
  headers: IncomingHttpHeaders,
  drop: readonly string[] = [],
): Record<string, string | string[]> {
  const listed = connectionListed(headers);
  const out: Record<string, string | string[]> = {};
  for (const k of Object.keys(headers)) {
    const v = headers[k];
    if (v === undefined || HOP_BY_HOP.has(k) || isRotaHeader(k) || drop.includes(k) || listed?.includes(k))
      continue;
    out[k] = v;
  }
  return out;
}

/** A refusal on a response that has not started. Rota's own answers carry no X-Rota-Proxy-Id. */
export function writeRefusal(res: ServerResponse, r: Refusal): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = `${r.message}\n`;
  res.writeHead(r.status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-rota-error': r.code,
    'proxy-status': r.proxyStatus,
    ...r.headers,
  });
  res.end(body);
}

/** A refusal as raw response bytes, for a socket node:http does not (or no longer) write to. */
export function rawRefusal(r: Refusal): string {
  const body = `${r.message}\n`;
  const extra = Object.entries(r.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`);
  return (
    `HTTP/1.1 ${r.status} ${STATUS_CODES[r.status] ?? 'Error'}\r\n` +
    `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `X-Rota-Error: ${r.code}\r\nProxy-Status: ${r.proxyStatus}\r\nConnection: close\r\n${extra.join('')}\r\n${body}`
  );
}

/** A refusal written on a raw socket (CONNECT, parser errors), which then closes. */
export function writeRawRefusal(socket: Duplex, r: Refusal): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(rawRefusal(r));
  // A client that does not read its answer must not hold the socket.
  setTimeout(() => socket.destroy(), 5_000).unref();
}
