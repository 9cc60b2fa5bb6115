import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import ipaddr from 'ipaddr.js';
import { normalizeHostName, parseNumericIPv4 } from './host.ts';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

type Entry =
  | { readonly kind: 'range'; readonly range: Range }
  | { readonly kind: 'host'; readonly name: string }
  | { readonly kind: 'subdomains'; readonly parent: string }
  | { readonly kind: 'invalid'; readonly problem: string };

function parseRange(entry: string): Entry {
  const slash = entry.lastIndexOf('/');
  const ip = slash < 0 ? entry : entry.slice(0, slash);
  const bits = slash < 0 ? null : entry.slice(slash + 1);
  const family = isIP(ip);
  const max = family === 6 ? 128 : 32;
  // Only dotted-quad IPv4 is accepted here: `0x7f.1/8` would work, but nobody should have to guess that.
  if (family === 0 || ip.includes('%')) return { kind: 'invalid', problem: 'is not a valid IP address' };
  if (bits !== null && (!/^[0-9]{1,3}$/.test(bits) || Number(bits) > max)) {
    return { kind: 'invalid', problem: `has a prefix length outside 0-${max}` };
  }
  return { kind: 'range', range: [ipaddr.parse(ip), bits === null ? max : Number(bits)] };
}

/** A host name as the URL parser would present it (IDNA to ASCII, lower case), or null when invalid. */
function canonicalName(raw: string): string | null {
  const name = normalizeHostName(domainToASCII(raw));
  if (name === '' || name.split('.').some((label) => !/^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?$/.test(label))) {
    return null;
  }
  return parseNumericIPv4(name) === null ? name : null;
}

function parseEntry(raw: string): Entry {
  const entry = raw.trim();
  if (entry.includes('/') || isIP(entry) !== 0) return parseRange(entry);
  const wildcard = entry.startsWith('*.');
  const name = canonicalName(wildcard ? entry.slice(2) : entry);
  if (name === null) return { kind: 'invalid', problem: 'is not a CIDR, IP address or host name' };
  return wildcard ? { kind: 'subdomains', parent: name } : { kind: 'host', name };
}

/** One line per bad ROTA_SSRF_ALLOW entry, for the start-up configuration report. */
export function validateAllowList(entries: readonly string[]): string[] {
  const problems: string[] = [];
  for (const raw of entries) {
    const e = parseEntry(raw);
    if (e.kind === 'invalid') problems.push(`${JSON.stringify(raw.trim())} ${e.problem}`);
  }
  return problems;
}

/**
 * ROTA_SSRF_ALLOW: CIDRs and single IPs exempt addresses (literal or resolved); host names, matched exactly
 * (case and trailing dot ignored), skip the name rules and DNS; `*.example.com` covers every subdomain of
 * example.com but not example.com itself. Invalid entries exempt nothing (validateAllowList reports them).
 */
export class AllowList {
  private readonly ranges: Range[] = [];
  private readonly names = new Set<string>();
  private readonly parents: string[] = [];

  constructor(entries: readonly string[]) {
    for (const raw of entries) {
      const e = parseEntry(raw);
      if (e.kind === 'range') this.ranges.push(e.range);
      else if (e.kind === 'host') this.names.add(e.name);
      else if (e.kind === 'subdomains') this.parents.push(e.parent);
    }
  }

  hasHost(host: string): boolean {
    const name = normalizeHostName(host);
    return this.names.has(name) || this.parents.some((p) => name.endsWith(`.${p}`));
  }

  hasAddress(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
    return this.ranges.some((r) => r[0].kind() === addr.kind() && addr.match(r));
  }
}
