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
 * absolute URIs, so one connection can serve any target: absolute-form.ts); each https target origin
 * has its own pool of tunnels. Reaching the proxy, TLS with it and the CONNECT exchange share one
 * connect-timeout budget.
 */
import type { Duplex } from 'node:stream';
import type { ProxyRecord } from '../pool/types.ts';
import { HttpProxyDispatcher } from './absolute-form.ts';
import { classifyProxyDialError, connectStatusError } from './classify.ts';
import {
  assertProxyAllowed,
  authority,
  connectTcp,
  connectTls,
  DialBudget,
  type DialerOptions,
  makeAgent,
  makePool,
  type TargetAddress,
  targetTls,
  toConnector,
} from './dial.ts';
import type { ProxyDispatcher } from './proxy-dispatcher.ts';
import { UpstreamError } from './types.ts';

export const MAX_CONNECT_HEAD = 16 * 1024;

/** `Basic base64(user:pass)`, or null without a username. A username without a password is allowed. */
export function basicAuth(username: string | null, password: string | null): string | null {
  if (username === null) return null;
  return `Basic ${Buffer.from(`${username}:${password ?? ''}`, 'utf8').toString('base64')}`;
}

export function proxyProtocolError(message: string): UpstreamError {
  return new UpstreamError('proxy_protocol', message, { mayHaveReachedTarget: false });
}

/**
 * A plain TCP tunnel's CONNECT is written before the socket is connected (tunnel.ts): an error from the
 * connect itself (or the proxy's name lookup) is a failure to reach the proxy, any later one the proxy
 * hanging up during CONNECT.
 */
export function stageOf(err: Error): 'tcp' | 'connect' {
  const syscall = (err as Error & { syscall?: string }).syscall;
  return syscall === 'connect' || syscall === 'getaddrinfo' ? 'tcp' : 'connect';
}

const DIGIT_0 = 0x30;
/** `HTTP/1.` */
const VERSION_PREFIX = [0x48, 0x54, 0x54, 0x50, 0x2f, 0x31, 0x2e];

function digit(b: number | undefined): number {
  return b !== undefined && b >= DIGIT_0 && b <= DIGIT_0 + 9 ? b - DIGIT_0 : -1;
}

/**
 * The status of an answer head to CONNECT (`HTTP/1.0` or `HTTP/1.1`, three digits, then a space or the
 * line's end), or null when it is not one. Read from the bytes: no string made per tunnel.
 */
export function parseConnectStatus(head: Buffer): number | null {
  if (head.length < 13) return null;
  for (let i = 0; i < VERSION_PREFIX.length; i++) if (head[i] !== VERSION_PREFIX[i]) return null;
  if (head[7] !== 0x30 && head[7] !== 0x31) return null;
  if (head[8] !== 0x20 || (head[12] !== 0x20 && head[12] !== 0x0d)) return null;
  const a = digit(head[9]);
  const b = digit(head[10]);
  const c = digit(head[11]);
  return a < 0 || b < 0 || c < 0 ? null : a * 100 + b * 10 + c;
}

/** The CONNECT request for `where` (host:port), with the proxy's own credentials when it has them. */
export function connectHead(where: string, auth: string | null): string {
  const credentials = auth === null ? '' : `Proxy-Authorization: ${auth}\r\n`;
  return `CONNECT ${where} HTTP/1.1\r\nHost: ${where}\r\nProxy-Connection: keep-alive\r\n${credentials}\r\n`;
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
        if (buf.length > MAX_CONNECT_HEAD) settle(proxyProtocolError('the CONNECT answer head is too large'));
        return;
      }
      const status = parseConnectStatus(buf);
      if (status === null)
        return settle(proxyProtocolError('the proxy answered CONNECT with something that is not HTTP'));
      socket.pause();
      const rest = buf.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      settle(null, status);
    };
    const onError = (err: Error) => settle(classifyProxyDialError(err, stageOf(err)));
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
  socket.write(connectHead(authority(target.hostname, target.port), auth));
  const status = await readConnectHead(socket, signal);
  if (status < 200 || status > 299) {
    socket.destroy();
    throw connectStatusError(status);
  }
}

/** TCP (or TCP + TLS for https://) to the proxy itself, once connected. */
export async function dialProxy(record: ProxyRecord, opts: DialerOptions, signal: AbortSignal) {
  assertProxyAllowed(record.host, opts);
  try {
    if (record.protocol === 'https') return await connectTls(record.host, record.port, opts.tls, signal);
    return await connectTcp(record.host, record.port, signal);
  } catch (err) {
    throw classifyProxyDialError(err, record.protocol === 'https' ? 'proxy_tls' : 'tcp');
  }
}

export function createHttpProxyDispatcher(record: ProxyRecord, opts: DialerOptions): ProxyDispatcher {
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
  return new HttpProxyDispatcher(
    makePool(forwardOrigin, connect, opts),
    () => makeAgent(connect, opts),
    auth,
  );
}
