import ipaddr from 'ipaddr.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

function parseAddr(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  let t = text.trim();
  // "[v6]:port" and "v4:port" as some proxies write them
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(t);
  if (bracket) t = bracket[1]!;
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(t)) t = t.slice(0, t.lastIndexOf(':'));
  if (!ipaddr.isValid(t)) return null;
  const a = ipaddr.parse(t);
  // Compare IPv4 peers the same whether the socket reports them as ::ffff:a.b.c.d or a.b.c.d.
  return a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress()
    ? (a as ipaddr.IPv6).toIPv4Address()
    : a;
}

// Canonical dotted-quad only (no leading zeros, which ipaddr.js would read as octal): parsing it changes nothing.
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const DOTTED_V4 = new RegExp(`^${OCTET}\\.${OCTET}\\.${OCTET}\\.${OCTET}$`);
const MAPPED_PREFIX = '::ffff:';

/**
 * With no trusted proxy the answer is the socket peer, and Node already reports it in canonical form: a
 * dotted IPv4 address, possibly IPv4-mapped (the dual-stack listener's `::ffff:a.b.c.d`). Those two are
 * answered without parsing (they are nearly every request); anything else takes the full parse, so the
 * result is the same as the general path's.
 */
function untrustedPeer(peer: string | undefined): string {
  if (!peer) return peer ?? 'unknown';
  const v4 = peer.startsWith(MAPPED_PREFIX) ? peer.slice(MAPPED_PREFIX.length) : peer;
  if (DOTTED_V4.test(v4)) return v4;
  return parseAddr(peer)?.toString() ?? peer;
}

/**
 * Decides the client address for rate limiting and logs. The header is believed only when the socket peer
 * is a trusted proxy, and then only from the right: each trusted hop appends what it saw, so the rightmost
 * address that is not itself a trusted proxy is the first one no client could have forged.
 */
export class ClientIpResolver {
  private readonly ranges: Range[];
  private readonly header: string;

  constructor(trustedCidrs: readonly string[], header: string) {
    this.ranges = trustedCidrs.map((c) => {
      const [addr, bits] = ipaddr.parseCIDR(c);
      const a = addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress();
      return a ? [(addr as ipaddr.IPv6).toIPv4Address(), Math.max(0, bits - 96)] : [addr, bits];
    });
    this.header = header.toLowerCase();
  }

  private trusted(a: ipaddr.IPv4 | ipaddr.IPv6): boolean {
    return this.ranges.some(([net, bits]) => net.kind() === a.kind() && a.match([net, bits] as never));
  }

  resolve(peer: string | undefined, headers: Record<string, string | string[] | undefined>): string {
    if (this.ranges.length === 0) return untrustedPeer(peer);
    const peerAddr = peer ? parseAddr(peer) : null;
    if (!peerAddr) return peer ?? 'unknown';
    if (this.ranges.length === 0 || !this.trusted(peerAddr)) return peerAddr.toString();
    const raw = headers[this.header];
    const value = Array.isArray(raw) ? raw.join(',') : raw;
    if (!value) return peerAddr.toString();
    const hops = value.split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const a = parseAddr(hops[i]!);
      if (!a) return peerAddr.toString(); // garbage in the chain: stop believing it
      if (!this.trusted(a)) return a.toString();
    }
    // Every hop is a trusted proxy: the leftmost is the best we know.
    return parseAddr(hops[0]!)?.toString() ?? peerAddr.toString();
  }
}
