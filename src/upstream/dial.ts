import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { buildConnector } from 'undici';
import type { CallerSignal } from '../lib/abort.ts';
import { HEAD_ORDER, placeHeads } from '../runtime/head-order.ts';
import { type Agent, newAgent, newPool, type Pool } from '../runtime/undici-agent.ts';
import { classifyTargetTlsError, dialTimeout } from './classify.ts';
import type { DirectReads } from './direct-reads.ts';
import { UpstreamError, type UpstreamTlsOptions } from './types.ts';

/**
 * What every dialer shares: a time budget for reaching the proxy, TCP and TLS helpers that honour it,
 * TLS with the target through a tunnel, and the keep-alive Agent settings. A dialer only decides how
 * to get a byte stream to the target; undici then speaks HTTP/1.1 over it and keeps it alive.
 */

export interface DialerOptions {
  /** Bounds reaching the proxy: TCP, TLS with the proxy, CONNECT or SOCKS handshake. */
  readonly connectTimeoutMs: number;
  readonly tls: UpstreamTlsOptions;
  /** Connections per target origin per proxy (undici pool size). */
  readonly connections?: number;
  /**
   * The SSRF rule for an address this dialer resolved itself (socks4, socks5): the guard checked the
   * name earlier, but DNS may answer differently now (rebinding). Returns a reason to refuse, or null.
   */
  readonly checkAddress?: ((ip: string) => string | null) | undefined;
  /** ROTA_UPSTREAM_ALLOW: whether Rota may connect to a proxy at this host; absent: any. */
  readonly proxyAllowed?: ((host: string) => boolean) | undefined;
}

/** Refuses, before any packet, a proxy whose host ROTA_UPSTREAM_ALLOW does not list. */
export function assertProxyAllowed(host: string, opts: DialerOptions): void {
  if (opts.proxyAllowed === undefined || opts.proxyAllowed(host)) return;
  throw new UpstreamError('connect', 'the proxy host is not in ROTA_UPSTREAM_ALLOW', {
    mayHaveReachedTarget: false,
  });
}

/** Where undici wants a connection to (the target, as seen before any proxying). */
export interface TargetAddress {
  readonly protocol: 'http:' | 'https:';
  readonly hostname: string; // IPv6 without brackets
  readonly port: number;
}

/** `host:port` as written in CONNECT request lines and Host headers. */
export function authority(hostname: string, port: number): string {
  return `${hostname.includes(':') ? `[${hostname}]` : hostname}:${port}`;
}

/** SNI must be a DNS name; Node refuses IP addresses there. */
export function serverName(hostname: string): string | undefined {
  return net.isIP(hostname) === 0 ? hostname : undefined;
}

/** What ends a dial early besides its own budget (a tunnel's attempt: upstream/tunnel.ts). */
export interface DialLimits {
  /** Monotonic ms by which the dial must be done; past it the dial fails with `timeout`. */
  readonly deadline: number;
  /** The caller leaving (or the attempt being released): the dial fails with `aborted`. */
  readonly signal?: CallerSignal | undefined;
}

/** When a dial's budget runs out, and with which error (made only then: an Error captures its stack). */
export interface DialExpiry {
  readonly delayMs: number;
  readonly error: () => UpstreamError;
}

/**
 * The connect-timeout budget `ms` (null: none, a dialer that keeps its own) against the call's deadline
 * in `limits`: whichever comes first ends the dial, as `timeout` either way, with a message that says
 * which.
 */
export function dialExpiry(ms: number | null, limits?: DialLimits): DialExpiry {
  const left =
    limits === undefined ? Number.POSITIVE_INFINITY : Math.max(0, limits.deadline - performance.now());
  if (ms !== null && ms < left) return { delayMs: ms, error: () => dialTimeout(ms) };
  return {
    delayMs: left,
    error: () =>
      new UpstreamError('timeout', 'deadline reached before the tunnel was open', {
        mayHaveReachedTarget: false,
      }),
  };
}

/** The caller left (or the attempt was released) while a dial was under way. */
export function callerLeft(): UpstreamError {
  return new UpstreamError('aborted', 'the caller left', { mayHaveReachedTarget: false });
}

/**
 * Everything that may end a dial, as one signal: the connect-timeout budget `ms` for every step of
 * reaching the proxy (null: none, a dialer that keeps its own), and with `limits` the call's deadline
 * and the caller leaving. One controller, one timer and one listener: AbortSignal.any() keeps weak
 * references to its sources and registers them for finalization, and a controller and a timer for the
 * attempt besides the dial's were, with it, among the larger costs of a tunnel in a --cpu-prof of the
 * CONNECT path. (A plain http:// proxy's tunnel has no signal at all: plain-connect.ts.)
 */
export class DialBudget {
  readonly signal: AbortSignal;
  readonly #timer: NodeJS.Timeout;
  readonly #parent: CallerSignal | undefined;
  readonly #onParent: (() => void) | undefined;

  constructor(ms: number | null, limits?: DialLimits) {
    const controller = new AbortController();
    this.signal = controller.signal;
    const expiry = dialExpiry(ms, limits);
    this.#timer = setTimeout(() => controller.abort(expiry.error()), expiry.delayMs);
    this.#timer.unref();
    const parent = limits?.signal;
    if (parent === undefined) return;
    this.#parent = parent;
    this.#onParent = () => controller.abort(callerLeft());
    if (parent.aborted) this.#onParent();
    else parent.addEventListener('abort', this.#onParent, { once: true });
  }

  done(): void {
    clearTimeout(this.#timer);
    if (this.#onParent) this.#parent?.removeEventListener('abort', this.#onParent);
  }
}

/**
 * Waits for `event` on a fresh socket. Any error, an early close or the budget running out destroys the
 * socket and rejects, so a half-built connection never leaks.
 */
export function once<S extends Duplex>(socket: S, event: string, signal: AbortSignal): Promise<S> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      socket.off(event, onEvent);
      socket.off('error', onError);
      socket.off('close', onClose);
      signal.removeEventListener('abort', onAbort);
    };
    const onEvent = () => {
      cleanup();
      resolve(socket);
    };
    const onError = (err: Error) => {
      cleanup();
      socket.destroy();
      reject(err);
    };
    const onClose = () => onError(Object.assign(new Error('socket closed'), { code: 'ECONNRESET' }));
    const onAbort = () => {
      cleanup();
      socket.destroy();
      reject(signal.reason);
    };
    if (signal.aborted) return onAbort();
    socket.once(event, onEvent);
    socket.once('error', onError);
    socket.once('close', onClose);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * TCP to a proxy, started and not awaited (a caller may write at once: the socket holds it until it is
 * connected); with `reads`, the socket reads into memory of its own (direct-reads.ts).
 */
export function openTcp(host: string, port: number, reads?: DirectReads): net.Socket {
  const socket = net.connect({ host, port, noDelay: true, ...(reads && { onread: reads.onread }) });
  reads?.attach(socket);
  return socket;
}

/** TCP to a proxy, once connected. */
export async function connectTcp(host: string, port: number, signal: AbortSignal): Promise<net.Socket> {
  return once(openTcp(host, port), 'connect', signal);
}

/** TCP + TLS to an https:// proxy. ALPN pins HTTP/1.1: we speak CONNECT or absolute-URI HTTP/1.1. */
export async function connectTls(
  host: string,
  port: number,
  opts: UpstreamTlsOptions,
  signal: AbortSignal,
): Promise<tls.TLSSocket> {
  const socket = tls.connect({
    host,
    port,
    servername: serverName(host),
    ALPNProtocols: ['http/1.1'],
    ...opts,
  });
  socket.setNoDelay(true);
  return once(socket, 'secureConnect', signal);
}

/** TLS with the target inside an established tunnel (its own budget: the proxy part is done). */
export async function targetTls(
  tunnel: Duplex,
  target: TargetAddress,
  opts: UpstreamTlsOptions,
  timeoutMs: number,
): Promise<tls.TLSSocket> {
  const socket = tls.connect({
    socket: tunnel,
    host: target.hostname,
    servername: serverName(target.hostname),
    ALPNProtocols: ['http/1.1'],
    ...opts,
  });
  const controller = new AbortController();
  const timer = setTimeout(() => {
    const err = new UpstreamError(
      'target_tls',
      `TLS handshake with the target timed out after ${timeoutMs} ms`,
      {
        mayHaveReachedTarget: false,
      },
    );
    controller.abort(err);
  }, timeoutMs);
  try {
    return await once(socket, 'secureConnect', controller.signal);
  } catch (err) {
    tunnel.destroy();
    throw classifyTargetTlsError(err);
  } finally {
    clearTimeout(timer);
  }
}

function targetOf(opts: buildConnector.Options): TargetAddress {
  const protocol = opts.protocol === 'https:' ? 'https:' : 'http:';
  const port = opts.port ? Number(opts.port) : protocol === 'https:' ? 443 : 80;
  const hostname = opts.hostname.startsWith('[') ? opts.hostname.slice(1, -1) : opts.hostname;
  return { protocol, hostname, port };
}

/**
 * Tags a socket's errors with whether it had read anything before (an answer: it was kept alive and
 * reused). The same error object reaches the request that was on the socket, so classify.ts can tell a
 * kept-alive connection the proxy closed while idle from a fresh one that broke.
 */
function markReuse(socket: net.Socket): void {
  socket.prependListener('error', (err: Error) => {
    if (socket.bytesRead > 0) Object.defineProperty(err, 'onReusedConnection', { value: true });
  });
}

/** Adapts a promise-returning dialer to undici's connect callback. */
export function toConnector(
  dial: (target: TargetAddress) => Promise<net.Socket | tls.TLSSocket>,
): buildConnector.connector {
  return (opts, callback) => {
    dial(targetOf(opts)).then(
      (socket) => {
        markReuse(socket);
        // Host and Connection where the client had them (head-order.ts), on every request of this socket.
        if (HEAD_ORDER) placeHeads(socket);
        callback(null, socket);
      },
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), null),
    );
  };
}

/**
 * One long-lived Agent (or Pool) per proxy. pipelining 1: a proxy connection carries one request at a
 * time, so a slow answer never holds up another. keepAliveTimeout stays short (undici shortens it
 * further when the server announces its own) because a proxy closing an idle connection under us costs
 * a failed attempt.
 */
function poolOptions(connect: buildConnector.connector, opts: DialerOptions) {
  return {
    connect,
    allowH2: false,
    pipelining: 1,
    connections: opts.connections ?? 32,
    keepAliveTimeout: 4_000,
    keepAliveMaxTimeout: 60_000,
  };
}

export function makeAgent(connect: buildConnector.connector, opts: DialerOptions): Agent {
  return newAgent(poolOptions(connect, opts));
}

/** The same settings for one origin: an http:// proxy's pool of absolute-URI connections. */
export function makePool(origin: string, connect: buildConnector.connector, opts: DialerOptions): Pool {
  return newPool(origin, poolOptions(connect, opts));
}
