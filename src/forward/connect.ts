/*
 * The HTTP listener's CONNECT path: a tunnel for HTTPS (or anything else) through the pool.
 *
 *   client ──CONNECT site:443──▶ Rota :ROTA_PROXY_PORT
 *            admit (auth, parameters) ─▶ SSRF rules ─▶ Executor(tunnelWork)
 *                                                          │ failover until one proxy is connected to
 *                                                          ▼ the target
 *                                   upstream proxy ──CONNECT / SOCKS──▶ site
 *   client ◀── 200 + X-Rota-Proxy-Id, only now; then bytes both ways (splice.ts), never retried
 */

import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { closeSignal } from '../lib/abort.ts';
import { ParsedOrigin } from '../lib/origin-cache.ts';
import { authority } from '../upstream/dial.ts';
import type { TunnelTarget } from '../upstream/tunnel.ts';
import { refusal } from './answers.ts';
import { admit, type HttpDoorDeps, writeRawRefusal } from './http-door.ts';
import { inspectTunnel } from './inspect.ts';
import { splice } from './splice.ts';

const NAME = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252})$/;

/** `host:port` or `[v6]:port` with a port from 1 to 65535; null for anything else. */
export function parseAuthority(raw: string | undefined): TunnelTarget | null {
  if (raw === undefined) return null;
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]/@\s]+)):(\d{1,5})$/.exec(raw);
  if (!m) return null;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return null;
  if (m[1] !== undefined) return net.isIPv6(m[1]) ? { hostname: m[1].toLowerCase(), port } : null;
  const host = m[2] ?? '';
  if (!NAME.test(host) || host.includes('..')) return null;
  return { hostname: host.toLowerCase(), port };
}

/** A tunnel's destination as a door received it, parsed once: the target, and the origin the SSRF rules read. */
export interface Destination {
  readonly target: TunnelTarget;
  readonly origin: ParsedOrigin;
}

/**
 * Bounded memo of destinationOf for both doors (a client spraying authorities starts it over). Clients
 * ask for the same few authorities again and again; parsing one (two patterns) and its origin cost ~3 µs
 * of a tunnel in a --cpu-prof of new tunnels per second. Shared read only.
 */
const destinations = new Map<string, Destination>();
const MAX_DESTINATIONS = 1024;

/**
 * `host:port` (as parseAuthority takes it) as a destination, or null when it is not one. A name that
 * passes parseAuthority but is no host for a URL (`999.1.1.1`) is refused here too, as bad input, rather
 * than failing later as an internal error.
 */
export function destinationOf(raw: string | undefined): Destination | null {
  if (raw === undefined) return null;
  const known = destinations.get(raw);
  if (known !== undefined) return known;
  const target = parseAuthority(raw);
  if (target === null) return null;
  let origin: ParsedOrigin;
  try {
    origin = new ParsedOrigin(`http://${authority(target.hostname, target.port)}`);
  } catch {
    return null;
  }
  if (destinations.size >= MAX_DESTINATIONS) destinations.clear();
  const d = { target, origin };
  destinations.set(raw, d);
  return d;
}

export async function handleConnect(
  d: HttpDoorDeps,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): Promise<void> {
  socket.on('error', () => socket.destroy());
  // Held from now on, so that a stop reaches it whatever step it is at (node:http forgets it after 'connect').
  d.sockets.add(socket);
  socket.once('close', () => d.sockets.delete(socket));
  const dest = destinationOf(req.url);
  if (dest === null) {
    d.metrics.answered('connect', 'BAD_REQUEST');
    writeRawRefusal(socket, refusal('BAD_REQUEST', 'CONNECT needs host:port with a port from 1 to 65535'));
    return;
  }
  const admitted = admit(d.auth, req);
  const door = admitted instanceof Promise ? await admitted : admitted;
  if (!door.ok) {
    d.metrics.answered('connect', door.refusal.code);
    writeRawRefusal(socket, door.refusal);
    return;
  }
  const inspect = d.inspect;
  if (inspect?.decide(dest.target.hostname, door.params.inspect) === true) {
    const verdict = inspect.forbidden(dest.origin);
    const blocked = verdict instanceof Promise ? await verdict : verdict;
    if (blocked !== null) {
      d.metrics.answered('connect', blocked.code);
      writeRawRefusal(socket, blocked);
      return;
    }
    // Answered at once: the proxy is chosen per request inside (forward/inspect.ts).
    d.metrics.answered('connect', null);
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    inspectTunnel(inspect.door, inspect.server, socket as net.Socket, dest.target, door.params, head);
    return;
  }
  const gone = closeSignal(socket);
  const out = await d.gateway.tunnel(dest.target, door.params, gone.signal, dest.origin, 'connect');
  gone.release();
  if (!out.ok) {
    d.metrics.answered('connect', out.refusal.code);
    writeRawRefusal(socket, out.refusal);
    return;
  }
  const upstream = out.value;
  if (socket.destroyed) {
    upstream.destroy();
    d.gateway.ended(out, 0, 0);
    return;
  }
  d.metrics.answered('connect', null);
  socket.write(`HTTP/1.1 200 Connection Established\r\nX-Rota-Proxy-Id: ${out.proxyId}\r\n\r\n`);
  // Bytes the client sent right after its CONNECT head (a TLS ClientHello, often) go first.
  if (head.length > 0) upstream.write(head);
  d.metrics.tunnelOpened('connect');
  splice(socket, upstream, d.idle, (r) => {
    d.metrics.tunnelClosed('connect');
    d.metrics.bytes('connect', r.up + head.length, r.down);
    d.gateway.ended(out, r.up + head.length, r.down);
  });
}
