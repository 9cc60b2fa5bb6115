import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Reader } from '../config-reader.ts';

/**
 * Host names as a Host header or ROTA_ALLOWED_HOSTS give them, and the default allow-list: read by the
 * configuration (config.ts) and checked by the API's origin guard (http/origin-guard.ts).
 */

/** A host as named in a Host header or an allow-list entry: lowercase, no trailing dot; null port: none given. */
export interface HostName {
  readonly name: string;
  readonly port: number | null;
}

const DNS_NAME = /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*$/;
const PORT = /^:\d{1,5}$/;

/** `name[:port]` or `[v6][:port]`, case and one trailing dot ignored; null when it is not a host. */
export function parseHost(value: string): HostName | null {
  const v = value.toLowerCase();
  let name: string;
  let rest: string;
  if (v.startsWith('[')) {
    const end = v.indexOf(']');
    const inner = v.slice(1, end);
    if (end < 0 || isIP(inner) !== 6) return null;
    name = `[${ipaddr.IPv6.parse(inner).toString()}]`;
    rest = v.slice(end + 1);
  } else {
    const colon = v.indexOf(':');
    name = colon < 0 ? v : v.slice(0, colon);
    rest = colon < 0 ? '' : v.slice(colon);
    if (name.endsWith('.')) name = name.slice(0, -1);
    if (!DNS_NAME.test(name)) return null;
  }
  if (rest === '') return { name, port: null };
  if (!PORT.test(rest)) return null;
  const port = Number(rest.slice(1));
  return port <= 65535 ? { name, port } : null;
}

export function formatHost(h: HostName): string {
  return h.port === null ? h.name : `${h.name}:${h.port}`;
}

function isLoopbackName(name: string): boolean {
  if (name === 'localhost') return true;
  const ip = name.startsWith('[') ? name.slice(1, -1) : name;
  return isIP(ip) !== 0 && ipaddr.parse(ip).range() === 'loopback';
}

/** Without ROTA_ALLOWED_HOSTS: the loopback names when Rota listens on loopback, otherwise any host (`*`). */
export function defaultAllowedHosts(bound: string): string[] {
  const h = parseHost(isIP(bound) === 6 ? `[${bound}]` : bound);
  if (h === null || !isLoopbackName(h.name)) return ['*'];
  return [...new Set(['localhost', '127.0.0.1', '[::1]', h.name])];
}

/** ROTA_ALLOWED_HOSTS, each entry normalised, or the default for the bound address `bound` (ROTA_HOST). */
export function parseAllowedHosts(r: Reader, bound: string): string[] {
  const name = 'ROTA_ALLOWED_HOSTS';
  if (r.raw(name) === undefined) return defaultAllowedHosts(bound);
  const items = r.list(name);
  if (items.length === 0) r.problems.push(`${name}: expected at least one host, or * for any`);
  const out: string[] = [];
  for (const item of items) {
    const h = item === '*' ? null : parseHost(item);
    if (item === '*') out.push('*');
    else if (h !== null) out.push(formatHost(h));
    else
      r.problems.push(
        `${name}: ${JSON.stringify(item)} is not a host name or address with an optional :port ` +
          '(an IPv6 address in brackets)',
      );
  }
  return out;
}
