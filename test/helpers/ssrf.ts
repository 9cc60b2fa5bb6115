/** Generators and tables shared by the SSRF tests (not a test file itself, so importing it runs nothing). */
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import type { SsrfReason } from '../../src/ssrf/types.ts';

/** Every special IPv4 range the guard refuses, with the reason a member must get. */
export const V4_SPECIAL: ReadonlyArray<readonly [string, SsrfReason]> = [
  ['0.0.0.0/8', 'unspecified'],
  ['127.0.0.0/8', 'loopback'],
  ['10.0.0.0/8', 'private'],
  ['172.16.0.0/12', 'private'],
  ['192.168.0.0/16', 'private'],
  ['100.64.0.0/10', 'private'],
  ['169.254.0.0/16', 'link_local'],
  ['224.0.0.0/4', 'multicast'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'reserved'],
  ['198.18.0.0/15', 'reserved'],
  ['198.51.100.0/24', 'reserved'],
  ['203.0.113.0/24', 'reserved'],
  ['240.0.0.0/5', 'reserved'],
  ['248.0.0.0/6', 'reserved'],
  ['252.0.0.0/7', 'reserved'],
  ['254.0.0.0/8', 'reserved'],
  ['255.0.0.0/9', 'reserved'],
  ['255.255.255.255/32', 'broadcast'],
];

export function toDotted(n: number): string {
  return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
}

export function toUint(dotted: string): number {
  return ipaddr.IPv4.parse(dotted).octets.reduce((acc, o) => acc * 256 + o, 0);
}

/** A random member of `cidr` (IPv4). */
export function inV4Range(cidr: string): fc.Arbitrary<string> {
  const [base, bits] = ipaddr.IPv4.parseCIDR(cidr);
  const start = toUint(base.toString());
  return fc.integer({ min: 0, max: 2 ** (32 - bits) - 1 }).map((n) => toDotted(start + n));
}

/** Public by ipaddr.js's own tables (an oracle independent of ours). */
export const publicV4: fc.Arbitrary<string> = fc
  .integer({ min: 0, max: 2 ** 32 - 1 })
  .map(toDotted)
  .filter((ip) => ipaddr.IPv4.parse(ip).range() === 'unicast');

const hex4 = (dotted: string): [string, string] => {
  const n = toUint(dotted);
  return [Math.floor(n / 65536).toString(16), (n % 65536).toString(16)];
};
const flip = (h: string): string => (Number.parseInt(h, 16) ^ 0xffff).toString(16);

/** Every IPv6 notation that carries `v4` and must be classified by it (Teredo client and server). */
export function v6Forms(v4: string): string[] {
  const [hi, lo] = hex4(v4);
  const pub = '4136:e378'; // 65.54.227.120, a public Teredo server
  return [
    `::ffff:${v4}`,
    `::ffff:${hi}:${lo}`,
    `::ffff:0:${v4}`,
    `64:ff9b::${v4}`,
    `64:ff9b::${hi}:${lo}`,
    `2002:${hi}:${lo}::1`,
    `2002:${hi}:${lo}:5::abcd`,
    `2001:0:${hi}:${lo}::f7f7:f7f7`, // client 8.8.8.8
    `2001:0:${pub}:8000:63bf:${flip(hi)}:${flip(lo)}`,
  ];
}

/** Random upper/lower case of `s`. */
export function randomCase(s: string): fc.Arbitrary<string> {
  return fc
    .array(fc.boolean(), { minLength: s.length, maxLength: s.length })
    .map((flags) => [...s].map((c, i) => (flags[i] ? c.toUpperCase() : c)).join(''));
}

/** A number written as one part of a numeric IPv4 host: decimal, octal (leading 0) or hex (0x / 0X). */
function part(n: number): fc.Arbitrary<string> {
  return fc.constantFrom('dec', 'oct', 'hex', 'HEX').map((radix) => {
    if (radix === 'dec') return String(n);
    if (radix === 'oct') return `0${n.toString(8)}`;
    return `${radix === 'hex' ? '0x' : '0X'}${n.toString(16)}`;
  });
}

/** `value` (a uint32) spelled in 1 to 4 parts, each in a random radix, optionally with a trailing dot. */
export function numericHost(value: number): fc.Arbitrary<string> {
  return fc.tuple(fc.integer({ min: 1, max: 4 }), fc.boolean()).chain(([count, dot]) => {
    const bytes = [24, 16, 8, 0].map((s) => Math.floor(value / 2 ** s) % 256);
    const lead = bytes.slice(0, count - 1);
    const rest = bytes.slice(count - 1).reduce((acc, b) => acc * 256 + b, 0);
    return fc.tuple(...[...lead, rest].map(part)).map((ps) => `${ps.join('.')}${dot ? '.' : ''}`);
  });
}
