/**
 * The host a leaf certificate is made for, in one canonical form (the leaf cache's key): a DNS name in
 * lower case, in its ASCII (punycode) form, without a trailing dot; or an IP address as ipaddr.js writes
 * it (IPv6 compressed, brackets dropped). Anything else, wildcards included, is refused with a RotaError.
 */
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import ipaddr from 'ipaddr.js';
import { RotaError } from '../errors/rota-error.ts';

export type InspectHost =
  | { readonly kind: 'dns'; readonly name: string }
  | { readonly kind: 'ip'; readonly name: string };

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
const MAX_INPUT = 300;

function refuse(input: string): RotaError {
  const shown = JSON.stringify(input.length > 100 ? `${input.slice(0, 100)}…` : input);
  return new RotaError('INVALID_URL', `inspection: not a host name or IP address: ${shown}`);
}

function dnsName(lower: string): string | null {
  const ascii = /^[\x21-\x7e]+$/.test(lower) ? lower : domainToASCII(lower);
  const name = ascii.endsWith('.') ? ascii.slice(0, -1) : ascii;
  if (name === '' || name.length > 253) return null;
  const labels = name.split('.');
  if (!labels.every((l) => LABEL.test(l))) return null;
  // A name whose last label is all digits reads as a malformed IPv4 address, not a host.
  if (/^\d+$/.test(labels[labels.length - 1] ?? '')) return null;
  return name;
}

/** The canonical host for `input` (an SNI name, a CONNECT target's host), or a RotaError. */
export function inspectHost(input: string): InspectHost {
  if (input.length === 0 || input.length > MAX_INPUT) throw refuse(input);
  const lower = input.toLowerCase();
  const bare = lower.startsWith('[') && lower.endsWith(']') ? lower.slice(1, -1) : lower;
  if (isIP(bare) !== 0 && !bare.includes('%')) return { kind: 'ip', name: ipaddr.parse(bare).toString() };
  if (bare !== lower) throw refuse(input);
  const name = dnsName(lower);
  if (name === null) throw refuse(input);
  return { kind: 'dns', name };
}
