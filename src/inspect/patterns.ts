/**
 * Host patterns: which hosts a list names (HTTPS inspection's `hosts` and `passthrough`; policies may
 * reuse it). A pattern is one of
 *   - `example.com`: that host exactly;
 *   - `*.example.com`: any subdomain of it, at any depth, but not `example.com` itself;
 *   - `*`: every host;
 *   - an IPv4 or IPv6 literal (`10.0.0.1`, `::1`, `[::1]`): that address exactly.
 * Names are letters, digits, hyphens and underscores in dot-separated labels (ASCII: an international
 * name is written in its `xn--` form), compared case-insensitively, a trailing dot ignored.
 *
 * Matching is a Set lookup for exact names plus one lookup per dot of the host for the wildcards (the
 * host's parent names, nearest first): no regular expression is ever built from a pattern.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Reader } from '../config-reader.ts';

/** Patterns one list may hold. */
export const MAX_PATTERNS = 1_000;
/** Characters of one pattern as written (a DNS name is at most 253). */
export const MAX_PATTERN_LENGTH = 253;

export type PatternCheck =
  | { readonly ok: true; readonly pattern: string }
  | { readonly ok: false; readonly reason: string };

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
const DIGITS = /^[0-9]+$/;

const refused = (reason: string): PatternCheck => ({ ok: false, reason });

/** The canonical text of an IP literal (ipaddr.js: IPv6 compressed, lower case), or null. */
function ipLiteral(text: string): string | null {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  // A zone index (`fe80::1%eth0`) names an interface of this machine, not a host.
  if (bare.includes('%') || isIP(bare) === 0) return null;
  if (bare !== text && isIP(bare) !== 6) return null;
  return ipaddr.parse(bare).toString();
}

/** A lower-case DNS name without its trailing dot, or null when it is not one. */
function dnsName(lower: string): string | null {
  const name = lower.endsWith('.') ? lower.slice(0, -1) : lower;
  if (name === '' || name.length > MAX_PATTERN_LENGTH) return null;
  const labels = name.split('.');
  if (!labels.every((l) => LABEL.test(l))) return null;
  // A last label of digits only reads as an IPv4 address, which a name is not.
  if (DIGITS.test(labels[labels.length - 1] ?? '')) return null;
  return name;
}

/** Whether `input` is a pattern, and its canonical form (lower case, no trailing dot, IPv6 compressed). */
export function checkPattern(input: string): PatternCheck {
  if (input.length === 0) return refused('must not be empty');
  if (input.length > MAX_PATTERN_LENGTH) return refused(`longer than ${MAX_PATTERN_LENGTH} characters`);
  if (input === '*') return { ok: true, pattern: '*' };
  // Checked as written: a character outside ASCII may lower-case into ASCII (U+212A KELVIN SIGN → k).
  if (!/^[\x21-\x7e]+$/.test(input)) return refused('only ASCII letters, digits, "-", "_", "." and "*."');
  const ip = ipLiteral(input);
  if (ip !== null) return { ok: true, pattern: ip };
  const wild = input.startsWith('*.');
  const name = dnsName((wild ? input.slice(2) : input).toLowerCase());
  if (name === null) {
    return refused(
      input.slice(wild ? 2 : 0).includes('*')
        ? 'a wildcard is "*" alone or a leading "*." only'
        : 'not a host name (labels of letters, digits, "-" and "_") or an IP address',
    );
  }
  return { ok: true, pattern: wild ? `*.${name}` : name };
}

/** One problem of a pattern list: its index and why. */
export interface PatternProblem {
  readonly index: number;
  readonly input: string;
  readonly reason: string;
}

/** Canonical patterns, duplicates dropped (first kept), or every problem found. */
export function normalizePatterns(
  list: readonly string[],
):
  | { readonly ok: true; readonly patterns: string[] }
  | { readonly ok: false; readonly problems: PatternProblem[] } {
  const problems: PatternProblem[] = [];
  const out = new Set<string>();
  list.forEach((input, index) => {
    const c = checkPattern(input);
    if (c.ok) out.add(c.pattern);
    else problems.push({ index, input, reason: c.reason });
  });
  if (list.length > MAX_PATTERNS) {
    problems.push({ index: MAX_PATTERNS, input: '', reason: `at most ${MAX_PATTERNS} patterns` });
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, patterns: [...out] };
}

/**
 * A host as patterns compare it: lower case, without a trailing dot; an IP literal (brackets or not) in
 * its canonical form. Anything else is returned lower-cased, and then matches only `*`.
 */
export function normalizeHost(host: string): string {
  const lower = host.toLowerCase();
  if (lower.includes(':')) return ipLiteral(lower) ?? lower;
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

/** A compiled pattern list. */
export interface HostMatcher {
  /** The canonical patterns it was made of. */
  readonly patterns: readonly string[];
  /** True when `host` (any case, a trailing dot, an IP literal with or without brackets) is named. */
  matches(host: string): boolean;
  /** The same for a host already passed through normalizeHost (one normalisation for several lists). */
  matchesNormal(host: string): boolean;
}

/**
 * Compiles canonical patterns (checkPattern's output). A pattern that does not pass checkPattern is left
 * out: a list read back from storage written by another version may hold one.
 */
export function compilePatterns(list: readonly string[]): HostMatcher {
  const exact = new Set<string>();
  const suffixes = new Set<string>();
  let all = false;
  const kept: string[] = [];
  for (const input of list) {
    const c = checkPattern(input);
    if (!c.ok) continue;
    kept.push(c.pattern);
    if (c.pattern === '*') all = true;
    else if (c.pattern.startsWith('*.')) suffixes.add(c.pattern.slice(2));
    else exact.add(c.pattern);
  }
  const matchesNormal = (host: string): boolean => {
    if (all) return true;
    if (exact.has(host)) return true;
    if (suffixes.size === 0) return false;
    for (let i = host.indexOf('.'); i !== -1; i = host.indexOf('.', i + 1)) {
      if (suffixes.has(host.slice(i + 1))) return true;
    }
    return false;
  };
  return {
    patterns: kept,
    matchesNormal,
    matches: (host) => matchesNormal(normalizeHost(host)),
  };
}

/** A comma-separated pattern list from the environment; every bad pattern is a problem naming `name`. */
export function readPatternList(r: Reader, name: string): string[] {
  const result = normalizePatterns(r.list(name));
  if (result.ok) return result.patterns;
  for (const p of result.problems) {
    const shown = p.input === '' ? '' : `${JSON.stringify(p.input.slice(0, 100))}: `;
    r.problems.push(`${name}: ${shown}${p.reason}`);
  }
  return [];
}
