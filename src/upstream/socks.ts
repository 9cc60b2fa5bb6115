/*
 * Dialer for socks4, socks4a, socks5 and socks5h proxies.
 *
 *     gateway ──TCP──▶ SOCKS proxy ──TCP──▶ target
 *             SOCKS handshake (+ username/password for SOCKS5, user id for SOCKS4)
 *             CONNECT target:port  ◀── granted
 *             ═══ [TLS with the target, https only] ═══▶
 *             GET /path HTTP/1.1 (origin form: the proxy relays bytes, it never sees HTTP)
 *
 *   socks4, socks5:   the gateway resolves the target name (node:dns) and sends an IP address.
 *   socks4a, socks5h: the name goes to the proxy, which resolves it.
 *
 * SOCKS4 carries IPv4 only, so socks4 needs an IPv4 address for the target. For socks5 an IPv4 address
 * is preferred when the name has both (proxies' own networks are more often IPv4-only).
 */
import { lookup } from 'node:dns/promises';
import net from 'node:net';
import { SocksClient, type SocksProxy } from 'socks';
import type { ProxyRecord } from '../pool/types.ts';
import { classifySocksError, safeCause } from './classify.ts';
import {
  assertProxyAllowed,
  type DialerOptions,
  makeAgent,
  type TargetAddress,
  targetTls,
  toConnector,
} from './dial.ts';
import { AgentDispatcher, type ProxyDispatcher } from './proxy-dispatcher.ts';
import { UpstreamError } from './types.ts';

export type SocksProtocol = 'socks4' | 'socks4a' | 'socks5' | 'socks5h';

function resolvesLocally(p: SocksProtocol): boolean {
  return p === 'socks4' || p === 'socks5';
}

/** The address the proxy is asked to connect to. A lookup failure is the target's problem, not the proxy's. */
export async function destinationHost(
  hostname: string,
  protocol: SocksProtocol,
  checkAddress?: (ip: string) => string | null,
): Promise<string> {
  if (!resolvesLocally(protocol) || net.isIP(hostname) !== 0) {
    if (protocol === 'socks4' && net.isIPv6(hostname)) throw noIpv4(hostname);
    return hostname;
  }
  let addresses: { address: string; family: number }[];
  try {
    addresses = await lookup(hostname, { all: true });
  } catch (err) {
    throw new UpstreamError('target_unreachable', `could not resolve the target host ${hostname}`, {
      mayHaveReachedTarget: false,
      cause: safeCause(err),
    });
  }
  const v4 = addresses.find((a) => a.family === 4);
  const chosen = v4 ?? (protocol === 'socks4' ? undefined : addresses[0]);
  if (chosen === undefined) throw noIpv4(hostname);
  const reason = checkAddress?.(chosen.address) ?? null;
  if (reason !== null) {
    throw new UpstreamError(
      'target_forbidden',
      `the target now resolves to a forbidden address (${reason})`,
      {
        mayHaveReachedTarget: false,
      },
    );
  }
  return chosen.address;
}

function noIpv4(hostname: string): UpstreamError {
  return new UpstreamError('target_unreachable', `socks4 needs an IPv4 address and ${hostname} has none`, {
    mayHaveReachedTarget: false,
  });
}

function socksProxy(record: ProxyRecord, protocol: SocksProtocol): SocksProxy {
  const type = protocol === 'socks4' || protocol === 'socks4a' ? 4 : 5;
  const proxy: SocksProxy = { host: record.host, port: record.port, type };
  if (record.username !== null) {
    proxy.userId = record.username;
    if (type === 5) proxy.password = record.password ?? '';
  }
  return proxy;
}

/** A socket connected to `target` through the SOCKS proxy of `record` (handshake bounded by `timeoutMs`). */
export async function openSocks(
  record: ProxyRecord,
  protocol: SocksProtocol,
  target: Pick<TargetAddress, 'hostname' | 'port'>,
  timeoutMs: number,
  checkAddress?: (ip: string) => string | null,
  proxyAllowed?: (host: string) => boolean,
) {
  assertProxyAllowed(record.host, { connectTimeoutMs: timeoutMs, tls: {}, proxyAllowed });
  const host = await destinationHost(target.hostname, protocol, checkAddress);
  try {
    const { socket } = await SocksClient.createConnection({
      proxy: socksProxy(record, protocol),
      command: 'connect',
      destination: { host, port: target.port },
      timeout: timeoutMs,
    });
    socket.setNoDelay(true);
    return socket;
  } catch (err) {
    throw classifySocksError(err, timeoutMs);
  }
}

export function createSocksDispatcher(record: ProxyRecord, opts: DialerOptions): ProxyDispatcher {
  const protocol = record.protocol as SocksProtocol;
  const connect = toConnector(async (target) => {
    const socket = await openSocks(
      record,
      protocol,
      target,
      opts.connectTimeoutMs,
      opts.checkAddress,
      opts.proxyAllowed,
    );
    if (target.protocol === 'http:') return socket;
    return targetTls(socket, target, opts.tls, opts.connectTimeoutMs);
  });
  return new AgentDispatcher(makeAgent(connect, opts));
}
