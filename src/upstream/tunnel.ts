/*
 * A raw tunnel to a target through one upstream proxy, for the listeners' CONNECT and SOCKS5 doors.
 *
 *   http(s) proxy:   gateway ──TCP [──TLS]──▶ proxy   CONNECT host:port + Proxy-Authorization ◀── 2xx
 *   socks proxy:     gateway ──TCP──▶ proxy          SOCKS handshake, CONNECT host:port      ◀── granted
 *                    ════════════ bytes of the client, as they are, to the target ════════════▶
 *
 * Unlike the dispatchers (dispatchers.ts), nothing here speaks HTTP to the target or keeps a connection
 * for reuse: the socket is handed to the listener, which splices it to its client. Reaching the proxy and
 * its handshake share one connect-timeout budget; `signal` (the call's deadline or its caller leaving)
 * ends the attempt earlier, with its reason as the error.
 */
import type net from 'node:net';
import type { ProxyRecord } from '../pool/types.ts';
import { DialBudget, type DialerOptions } from './dial.ts';
import { DirectReads } from './direct-reads.ts';
import { basicAuth, dialProxy, requestTunnel } from './http-proxy.ts';
import { openSocks, type SocksProtocol } from './socks.ts';

export interface TunnelTarget {
  /** A host name, or an IP address (IPv6 without brackets). */
  readonly hostname: string;
  readonly port: number;
}

export async function openTunnel(
  record: ProxyRecord,
  target: TunnelTarget,
  opts: DialerOptions,
  signal: AbortSignal,
): Promise<net.Socket> {
  signal.throwIfAborted();
  if (record.protocol === 'http' || record.protocol === 'https') return viaHttp(record, target, opts, signal);
  return viaSocks(record, target, opts, signal);
}

async function viaHttp(
  record: ProxyRecord,
  target: TunnelTarget,
  opts: DialerOptions,
  signal: AbortSignal,
): Promise<net.Socket> {
  // One signal for the dial: the connect-timeout budget, or the caller's signal (deadline, client gone).
  const budget = new DialBudget(opts.connectTimeoutMs, signal);
  try {
    // A plain TCP proxy's socket reads into memory of its own (no allocation per chunk once spliced);
    // TLS to an https:// proxy reads through its own layer.
    const reads = record.protocol === 'http' ? new DirectReads() : undefined;
    const socket = (await dialProxy(record, opts, budget.signal, reads)) as net.Socket;
    try {
      await requestTunnel(socket, target, basicAuth(record.username, record.password), budget.signal);
    } catch (err) {
      socket.destroy();
      throw err;
    }
    return socket;
  } catch (err) {
    throw signal.aborted ? signal.reason : err;
  } finally {
    budget.done();
  }
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
