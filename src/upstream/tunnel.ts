/*
 * A raw tunnel to a target through one upstream proxy, for the listeners' CONNECT and SOCKS5 doors.
 *
 *   http(s) proxy:   gateway ──TCP [──TLS]──▶ proxy   CONNECT host:port + Proxy-Authorization ◀── 2xx
 *   socks proxy:     gateway ──TCP──▶ proxy          SOCKS handshake, CONNECT host:port      ◀── granted
 *                    ════════════ bytes of the client, as they are, to the target ════════════▶
 *
 * Unlike the dispatchers (dispatchers.ts), nothing here speaks HTTP to the target or keeps a connection
 * for reuse: the socket is handed to the listener, which splices it to its client. Reaching the proxy and
 * its handshake share one connect-timeout budget; the call's deadline (`timeout`) or its caller leaving
 * (`aborted`) end the attempt earlier: one DialBudget watches all three, or for a plain http:// proxy
 * (the common case) plain-connect.ts's own timer and listener.
 */
import type net from 'node:net';
import type { ProxyRecord } from '../pool/types.ts';
import { DialBudget, type DialerOptions, type DialLimits } from './dial.ts';
import { basicAuth, dialProxy, requestTunnel } from './http-proxy.ts';
import { connectPlain } from './plain-connect.ts';
import { openSocks, type SocksProtocol } from './socks.ts';

export interface TunnelTarget {
  /** A host name, or an IP address (IPv6 without brackets). */
  readonly hostname: string;
  readonly port: number;
}

/** What ends an attempt to open a tunnel early. */
export type TunnelLimits = DialLimits;

export function openTunnel(
  record: ProxyRecord,
  target: TunnelTarget,
  opts: DialerOptions,
  limits: TunnelLimits,
): Promise<net.Socket> {
  // Plain TCP to an http:// proxy: the CONNECT is written at once (the socket holds it until it is
  // connected), one wait covers the connection and the answer, and the socket reads into memory of its
  // own (no allocation per chunk once spliced).
  if (record.protocol === 'http')
    return connectPlain(record, target, basicAuth(record.username, record.password), opts, limits);
  return underBudget(record, target, opts, limits);
}

async function underBudget(
  record: ProxyRecord,
  target: TunnelTarget,
  opts: DialerOptions,
  limits: TunnelLimits,
): Promise<net.Socket> {
  const http = record.protocol === 'https';
  // The `socks` client keeps its own connect timeout.
  const budget = new DialBudget(http ? opts.connectTimeoutMs : null, limits);
  const signal = budget.signal;
  try {
    signal.throwIfAborted();
    return await (http ? viaHttps(record, target, opts, signal) : viaSocks(record, target, opts, signal));
  } catch (err) {
    throw signal.aborted ? signal.reason : err;
  } finally {
    budget.done();
  }
}

async function viaHttps(
  record: ProxyRecord,
  target: TunnelTarget,
  opts: DialerOptions,
  signal: AbortSignal,
): Promise<net.Socket> {
  // TLS with the proxy first; the socket reads through its own layer.
  const socket = await dialProxy(record, opts, signal);
  await requestTunnel(socket, target, basicAuth(record.username, record.password), signal);
  return socket;
}

/** The `socks` client takes no signal: a caller that leaves first gets its answer now, and the late socket is closed. */
function viaSocks(
  record: ProxyRecord,
  target: TunnelTarget,
  opts: DialerOptions,
  signal: AbortSignal,
): Promise<net.Socket> {
  const opening = openSocks(
    record,
    record.protocol as SocksProtocol,
    target,
    opts.connectTimeoutMs,
    opts.checkAddress,
    opts.proxyAllowed,
  );
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    opening.then(
      (socket) => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) socket.destroy();
        else resolve(socket);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(signal.aborted ? signal.reason : err);
      },
    );
  });
}
