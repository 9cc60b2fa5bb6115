import ipaddr from 'ipaddr.js';

/**
 * The bucket of an address. An IPv6 client usually holds a whole /64, so counting single addresses would
 * let it rotate through 2^64 buckets; the /64 is the unit a host can be held to.
 */
export function ipBucket(ip: string): string {
  // Every IPv6 form has a colon: IPv4 addresses (nearly every client) need no parsing.
  if (!ip.includes(':')) return ip;
  if (!ipaddr.IPv6.isValid(ip) || ipaddr.IPv4.isValid(ip)) return ip;
  const a = ipaddr.IPv6.parse(ip);
  if (a.isIPv4MappedAddress()) return a.toIPv4Address().toString();
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${a.toNormalizedString()}/64`).toString()}/64`;
}
