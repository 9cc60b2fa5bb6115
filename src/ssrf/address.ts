import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { SsrfReason } from './types.ts';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];
type Rule = readonly [Range, SsrfReason];

function rules(table: ReadonlyArray<readonly [string, SsrfReason]>): readonly Rule[] {
  return table.map(([cidr, reason]) => [ipaddr.parseCIDR(cidr), reason] as const);
}

// First match wins, so the broadcast address is listed before 240.0.0.0/4 that contains it.
const V4_RULES = rules([
  ['0.0.0.0/8', 'unspecified'],
  ['127.0.0.0/8', 'loopback'],
  ['10.0.0.0/8', 'private'],
  ['172.16.0.0/12', 'private'],
  ['192.168.0.0/16', 'private'],
  ['100.64.0.0/10', 'private'],
  ['169.254.0.0/16', 'link_local'],
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'reserved'],
  ['192.88.99.0/24', 'reserved'],
  ['198.18.0.0/15', 'reserved'],
  ['198.51.100.0/24', 'reserved'],
  ['203.0.113.0/24', 'reserved'],
  ['240.0.0.0/4', 'reserved'],
]);

const V6_RULES = rules([
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['fc00::/7', 'private'],
  ['fec0::/10', 'private'],
  ['fe80::/10', 'link_local'],
  ['ff00::/8', 'multicast'],
  ['2001:db8::/32', 'reserved'],
  ['3fff::/20', 'reserved'],
  ['100::/64', 'reserved'],
]);

// Only 2000::/3 is handed out as global unicast; anything else left over after the rules and the embedded
// IPv4 forms is unassigned or special-purpose and has no business being a fetch target.
const V6_GLOBAL = ipaddr.parseCIDR('2000::/3');

function matchRules(addr: ipaddr.IPv4 | ipaddr.IPv6, table: readonly Rule[]): SsrfReason | null {
  for (const [range, reason] of table) {
    if (range[0].kind() === addr.kind() && addr.match(range)) return reason;
  }
  return null;
}

function v4(bytes: readonly number[]): ipaddr.IPv4 {
  return new ipaddr.IPv4([bytes[0] ?? 0, bytes[1] ?? 0, bytes[2] ?? 0, bytes[3] ?? 0]);
}

const LOCAL_NAT64 = ipaddr.parseCIDR('64:ff9b:1::/48');
const isLocalNat64 = (a: ipaddr.IPv6): boolean => a.match(LOCAL_NAT64);

const zero = (parts: readonly number[], from: number, to: number): boolean =>
  parts.slice(from, to).every((p) => p === 0);

/**
 * The IPv4 addresses a packet to `a` really reaches: IPv4-mapped, IPv4-compatible, IPv4-translated
 * (::ffff:0:a.b.c.d), NAT64 (64:ff9b::/96; the local-use 64:ff9b:1::/48 read in its /96 layout),
 * 6to4 (2002::/16) and Teredo (2001::/32, both the server and the obfuscated client address).
 * Returns null when `a` carries no IPv4 address.
 */
export function embeddedIPv4(a: ipaddr.IPv6): ipaddr.IPv4[] | null {
  const p = a.parts;
  const b = a.toByteArray();
  if (zero(p, 0, 5) && p[5] === 0xffff) return [v4(b.slice(12))];
  if (zero(p, 0, 6)) return [v4(b.slice(12))];
  if (zero(p, 0, 4) && p[4] === 0xffff && p[5] === 0) return [v4(b.slice(12))];
  if (p[0] === 0x64 && p[1] === 0xff9b && zero(p, 2, 6)) return [v4(b.slice(12))];
  if (isLocalNat64(a)) return [v4(b.slice(12))];
  if (p[0] === 0x2002) return [v4(b.slice(2, 6))];
  if (p[0] === 0x2001 && p[1] === 0) {
    return [v4(b.slice(4, 8)), v4(b.slice(12).map((x) => x ^ 0xff))];
  }
  return null;
}

/** A predicate the guard uses to exempt allow-listed addresses, also applied to embedded IPv4 addresses. */
export type Exempt = (addr: ipaddr.IPv4 | ipaddr.IPv6) => boolean;

function classifyV6(a: ipaddr.IPv6, exempt: Exempt): SsrfReason | null {
  // :: and ::1 sit inside ::/96 (IPv4-compatible), so the direct rules go first.
  const direct = matchRules(a, V6_RULES);
  if (direct) return direct;
  const inner = embeddedIPv4(a);
  if (inner) {
    for (const x of inner) {
      const r = exempt(x) ? null : matchRules(x, V4_RULES);
      if (r) return r;
    }
    // RFC 8215 lets each site pick the layout inside 64:ff9b:1::/48 (RFC 6052 prefixes /48 to /96), so the
    // IPv4 address reached cannot be known for sure: after catching the usual /96 notation, fail closed.
    return isLocalNat64(a) ? 'reserved' : null;
  }
  return a.match(V6_GLOBAL) ? null : 'reserved';
}

/**
 * Like classifyAddress, with `exempt` consulted for the address itself and for each embedded IPv4 address.
 * Anything that is not a plain IP literal (dotted-quad IPv4 or IPv6, optionally bracketed or with a zone)
 * is 'reserved': a caller passing something else is a bug, and the guard must fail closed.
 */
export function classifyAddressWith(ip: string, exempt: Exempt): SsrfReason | null {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  if (isIP(bare) === 0) return 'reserved';
  const addr = ipaddr.parse(bare);
  if (exempt(addr)) return null;
  return addr instanceof ipaddr.IPv6 ? classifyV6(addr, exempt) : matchRules(addr, V4_RULES);
}

/** null means a public unicast address; otherwise why it must not be fetched. */
export function classifyAddress(ip: string): SsrfReason | null {
  return classifyAddressWith(ip, () => false);
}
