import type { SsrfReason } from './types.ts';

/**
 * Suffixes of names that only mean something inside a private network. Beyond `local`, `internal`, `lan`,
 * `corp`: `home.arpa` (RFC 8375), `localdomain` and ICANN's never-to-be-delegated collision names `home` and
 * `intranet`, `private` are included: none of them can name a public site.
 */
const INTERNAL_SUFFIXES = [
  'local',
  'internal',
  'lan',
  'corp',
  'home',
  'home.arpa',
  'localdomain',
  'intranet',
  'private',
] as const;

/** Lower case, without trailing dots: `Foo.LOCAL.` and `foo.local` are the same name to a resolver. */
export function normalizeHostName(host: string): string {
  return host.toLowerCase().replace(/\.+$/, '');
}

/** Rules on the name itself, before any DNS; `host` is a name, not an IP literal. */
export function hostNameReason(host: string): SsrfReason | null {
  const name = normalizeHostName(host);
  if (name === 'localhost' || name.endsWith('.localhost')) return 'loopback';
  if (INTERNAL_SUFFIXES.some((s) => name === s || name.endsWith(`.${s}`))) return 'internal_domain';
  // A single-label name (`intranet`, `db`) is never a public site: the resolver completes it with the
  // machine's search domains or asks LLMNR/mDNS on the local link, so it reaches internal hosts.
  if (!name.includes('.')) return 'internal_domain';
  return null;
}

function parsePart(part: string): number | null {
  if (/^0[xX][0-9a-fA-F]*$/.test(part)) return part.length === 2 ? 0 : Number.parseInt(part.slice(2), 16);
  if (/^0[0-7]+$/.test(part)) return Number.parseInt(part.slice(1), 8);
  if (/^(0|[1-9][0-9]*)$/.test(part)) return Number(part);
  return null;
}

/**
 * The IPv4 address that inet_aton and the WHATWG URL parser read from a numeric host (decimal, octal `0`
 * or hex `0x` parts, one to four of them, the last filling the remaining bytes), in dotted form; null when
 * `host` is not such a number. WHATWG URL already rewrites these in target URLs; this is used to refuse
 * such spellings in the allow list and to prove, in tests, that both readings agree.
 */
export function parseNumericIPv4(host: string): string | null {
  const parts = host.split('.');
  if (parts.length > 1 && parts.at(-1) === '') parts.pop();
  if (parts.length < 1 || parts.length > 4) return null;
  const nums: number[] = [];
  for (const part of parts) {
    const n = parsePart(part);
    if (n === null || !Number.isSafeInteger(n)) return null;
    nums.push(n);
  }
  const last = nums.pop() ?? 0;
  if (nums.some((n) => n > 255) || last >= 256 ** (4 - nums.length)) return null;
  let value = last;
  nums.forEach((n, i) => {
    value += n * 256 ** (3 - i);
  });
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join('.');
}
