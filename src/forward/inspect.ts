/*
 * An inspected tunnel: for a host inspection is on for (src/inspect/settings.ts), the CONNECT or SOCKS5
 * tunnel is answered at once and Rota speaks TLS to the client with a leaf certificate of its own CA
 * (src/inspect/leaves.ts). Each HTTP request inside is then one call of the one engine, like an
 * absolute-URI request: a pick of the strategy per request, failover, bans, records.
 *
 *   client ──CONNECT host:443──▶ listener ── 200 / SOCKS5 success at once
 *      first bytes ──not a TLS handshake──▶ a plain tunnel through a proxy picked now (bytes sent on)
 *           │ a ClientHello
 *           ▼
 *      TLS server (leaf for the SNI name, else the CONNECT host; ALPN http/1.1)
 *           │ HTTP/1.1 requests, kept alive          (a refused handshake: counted, logged once a host)
 *           ▼
 *      each request ──▶ forwardRequest (absolute.ts) ──▶ CallPrelude ──▶ Executor(streamedWork https://host)
 *                                                                       through a proxy kept alive per
 *                                                                       (proxy, origin), TLS verified
 */
import type http from 'node:http';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { closeSignal } from '../lib/abort.ts';
import { createServer } from '../runtime/node-http.ts';
import { authority } from '../upstream/dial.ts';
import type { TunnelTarget } from '../upstream/tunnel.ts';
import { forwardRequest } from './absolute.ts';
import { type Refusal, refusal } from './answers.ts';
import type { HttpDoorDeps } from './http-door.ts';
import { writeRefusal } from './http-door.ts';
import { relayUpgrade } from './inspect-upgrade.ts';
import { mergeHeaders, type ProxyParams } from './params.ts';
import { splice } from './splice.ts';

/** What the door needs of the certificate room (src/inspect/leaves.ts). */
export interface LeafSource {
  contextFor(host: string): Promise<tls.SecureContext>;
  /** True when asking for `host` makes no new leaf (kept, or being made). */
  has(host: string): boolean;
}

export interface InspectDoorDeps extends HttpDoorDeps {
  readonly leaves: LeafSource;
  /** Told once per host whose clients refuse Rota's certificate. */
  readonly onClientRefused: (host: string, err: Error) => void;
  /**
   * Whether this client may have one more leaf made (a host not kept yet). A leaf costs ~5 ms of CPU and
   * they are made one at a time: without a budget one client naming ever new hosts would hold up every
   * other client's new hosts and burn a core (ROTA_INSPECT_NEW_HOSTS_PER_MINUTE per client address).
   */
  readonly mayMakeLeaf: (socket: net.Socket) => boolean;
}

/**
 * What the CONNECT and SOCKS5 doors ask before they open a tunnel: is this one inspected, and is its
 * target allowed at all (the SSRF rules, asked before the tunnel is answered). Absent: inspection off.
 */
export interface InspectHook {
  decide(host: string, ask: 'on' | 'off' | undefined): boolean;
  /** The SSRF verdict on the target's origin: null when allowed, else the refusal to answer with. */
  forbidden(origin: URL): Refusal | null | Promise<Refusal | null>;
  readonly server: http.Server;
  readonly door: InspectDoorDeps;
}

/** A TLS handshake not begun within this long after the tunnel opened: the client is gone. */
const FIRST_BYTES_MS = 30_000;
const TLS_HANDSHAKE = 0x16;

/** What an inspected connection knows, carried by its TLS socket to the inner HTTP server. */
interface Inspected {
  readonly origin: URL;
  readonly params: ProxyParams;
  /** Requests of this connection whose answer is not done yet. */
  inFlight: number;
  /** The client ended its side: close once the answers in flight are done. */
  ended: boolean;
}
const INSPECTED = Symbol('rota.inspected');
type InspectedSocket = tls.TLSSocket & { [INSPECTED]?: Inspected };

/** The HTTP server that reads the requests of every inspected connection (it never listens itself). */
export function createInspectServer(d: InspectDoorDeps, onError: (err: unknown) => void): http.Server {
  const server = createServer({ requestTimeout: 0, keepAliveTimeout: d.idle.idleMs });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    handleInspected(d, req, res).catch((err: unknown) => {
      onError(err);
      if (!res.headersSent) writeRefusal(res, refusal('INTERNAL_ERROR', 'internal error'));
      else res.destroy();
    });
  });
  server.on('clientError', (_err: Error, socket: Duplex) => socket.destroy());
  // An upgrade (WebSocket): relayed through a proxy picked for it (inspect-upgrade.ts).
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    relayUpgrade(d, req, socket, head, (socket as InspectedSocket)[INSPECTED]).catch((err: unknown) => {
      onError(err);
      socket.destroy();
    });
  });
  return server;
}

async function handleInspected(
  d: InspectDoorDeps,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  const t = (req.socket as InspectedSocket)[INSPECTED];
  const path = t === undefined ? null : originForm(req.url, t.origin);
  if (t === undefined || path === null) {
    d.metrics.answered('inspect', 'BAD_REQUEST');
    writeRefusal(res, refusal('BAD_REQUEST', 'Send origin-form requests (/path) for this host'));
    return;
  }
  req.socket.setTimeout(d.idle.idleMs);
  // A request may name its own session or country (X-Rota-Session, X-Rota-Country) over the tunnel's.
  const merged = mergeHeaders(t.params, {
    session: one(req.headers['x-rota-session']),
    country: one(req.headers['x-rota-country']),
  });
  if (!merged.ok) {
    d.metrics.answered('inspect', 'INVALID_PROXY_PARAMS');
    writeRefusal(res, refusal('INVALID_PROXY_PARAMS', `Invalid proxy parameters: ${merged.reason}`));
    return;
  }
  t.inFlight++;
  res.once('close', () => {
    t.inFlight--;
    if (t.ended && t.inFlight === 0) req.socket.destroy();
  });
  await forwardRequest(d, req, res, { origin: t.origin, path }, merged.params, 'inspect');
}

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

/** The request's path: origin-form as is; absolute-form only for this connection's own origin. */
function originForm(url: string | undefined, origin: URL): string | null {
  if (url === undefined || url === '') return null;
  if (url.startsWith('/')) return url;
  if (!URL.canParse(url)) return null;
  const u = new URL(url);
  return u.origin === origin.origin ? `${u.pathname}${u.search}` : null;
}

/**
 * Takes over a tunnel already answered (200 or SOCKS5 success): TLS with the client when it speaks
 * TLS, else a plain tunnel through a proxy picked now. `head`: bytes the client sent with its request.
 */
export function inspectTunnel(
  d: InspectDoorDeps,
  inner: http.Server,
  socket: net.Socket,
  target: TunnelTarget,
  params: ProxyParams,
  head: Buffer,
): void {
  const go = (first: Buffer) => {
    if (first[0] !== TLS_HANDSHAKE) {
      void plainTunnel(d, socket, target, params, first);
      return;
    }
    socket.unshift(first);
    void terminateTls(d, inner, socket, target, params);
  };
  if (head.length > 0) {
    go(head);
    return;
  }
  const timer = setTimeout(() => socket.destroy(), FIRST_BYTES_MS);
  socket.once('data', (chunk: Buffer) => {
    clearTimeout(timer);
    socket.pause();
    go(chunk);
  });
  socket.once('close', () => clearTimeout(timer));
  // The SOCKS5 door paused the socket while it dialled nothing: the client's first bytes are awaited now.
  socket.resume();
}

async function terminateTls(
  d: InspectDoorDeps,
  inner: http.Server,
  socket: net.Socket,
  target: TunnelTarget,
  params: ProxyParams,
): Promise<void> {
  if (!d.leaves.has(target.hostname) && !d.mayMakeLeaf(socket)) {
    d.metrics.handshake('leaf_budget');
    socket.destroy();
    return;
  }
  let context: tls.SecureContext;
  try {
    context = await d.leaves.contextFor(target.hostname);
  } catch {
    socket.destroy();
    return;
  }
  const secure: InspectedSocket = new tls.TLSSocket(socket, {
    isServer: true,
    secureContext: context,
    ALPNProtocols: ['http/1.1'],
    // A name other than the CONNECT host (a client's own SNI): a leaf for that name.
    SNICallback: (name, cb) =>
      name === '' || name.toLowerCase() === target.hostname
        ? cb(null, context)
        : d.leaves.contextFor(name).then(
            (ctx) => cb(null, ctx),
            (err: unknown) => cb(err instanceof Error ? err : new Error(String(err))),
          ),
  });
  const origin = new URL(`https://${authority(target.hostname, target.port)}`);
  const state: Inspected = { origin, params, inFlight: 0, ended: false };
  secure[INSPECTED] = state;
  // The client is done (close_notify, FIN): node:http would wait half-open for ever on a TLS socket
  // (no 'finish' after its end()); close once the answers in flight are written.
  secure.once('end', () => {
    state.ended = true;
    if (state.inFlight === 0) secure.destroy();
  });
  let handshaken = false;
  secure.once('secure', () => {
    handshaken = true;
    d.metrics.handshake('ok');
    d.metrics.tunnelOpened('inspect');
    secure.once('close', () => d.metrics.tunnelClosed('inspect'));
    inner.emit('connection', secure);
  });
  secure.on('error', (err: Error) => {
    if (!handshaken) {
      d.metrics.handshake('client_refused');
      d.onClientRefused(target.hostname, err);
    }
    secure.destroy();
  });
}

/** Not TLS: the bytes go on through a tunnel made now, as an uninspected CONNECT would have. */
async function plainTunnel(
  d: InspectDoorDeps,
  socket: net.Socket,
  target: TunnelTarget,
  params: ProxyParams,
  first: Buffer,
): Promise<void> {
  d.metrics.handshake('not_tls');
  const origin = new URL(`http://${authority(target.hostname, target.port)}`);
  const gone = closeSignal(socket);
  const out = await d.gateway.tunnel(target, params, gone.signal, origin, 'connect');
  gone.release();
  if (!out.ok || socket.destroyed) {
    if (out.ok) {
      out.value.destroy();
      d.gateway.ended(out, 0, 0);
    }
    socket.destroy();
    return;
  }
  out.value.write(first);
  d.metrics.tunnelOpened('connect');
  socket.resume();
  splice(socket, out.value, d.idle, (r) => {
    d.metrics.tunnelClosed('connect');
    d.metrics.bytes('connect', r.up + first.length, r.down);
    d.gateway.ended(out, r.up + first.length, r.down);
  });
}
