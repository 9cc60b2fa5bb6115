/**
 * Proxy lists as text, shared by bulk import (`POST proxies/import`, text/plain) and proxy sources:
 * one proxy per line as `scheme://[user:pass@]host:port`, `[user:pass@]host:port` or
 * `host:port:user:pass` (bare forms take the given protocol); `#` starts a comment line; blank lines are
 * skipped. Lines are numbered from 1 counting every line, so that a reason points at the right one.
 */
import type { AddProxyInput } from '../pool/pool.ts';
import type { Protocol } from '../pool/types.ts';

/** Bulk import and sources refuse a list of more lines than this (413 for import). */
export const MAX_IMPORT_LINES = 100_000;

export interface Candidate {
  readonly line: number;
  readonly input: AddProxyInput;
}

export interface Invalid {
  readonly line: number;
  readonly reason: string;
}

/** A parsed list: what may become proxies, and why other lines cannot. */
export interface ParsedList {
  readonly candidates: Candidate[];
  readonly invalid: Invalid[];
  /** Every line, blank and comment lines included. */
  readonly lines: number;
}

export type LineResult = { ok: true; input: AddProxyInput } | { ok: false; reason: string } | null;

/** Splits on LF (a CR before it is dropped); a final newline does not start another line. */
export function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
}

/** Counts lines as `splitLines` would, without building them (to refuse an oversized list first). */
export function countLines(text: string): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return text.endsWith('\n') && text.length > 0 ? n - 1 : n;
}

const PORT = /^\d{1,5}$/;

/** `host:port[:user:pass]` or `[v6]:port[:user:pass]`: the pieces, or null when it is neither. */
function bareParts(line: string): { host: string; port: string; user?: string; pass?: string } | null {
  let host: string;
  let rest: string;
  if (line.startsWith('[')) {
    const end = line.indexOf(']');
    if (end === -1 || line[end + 1] !== ':') return null;
    host = line.slice(0, end + 1);
    rest = line.slice(end + 2);
  } else {
    const colon = line.indexOf(':');
    if (colon === -1) return null;
    host = line.slice(0, colon);
    rest = line.slice(colon + 1);
  }
  const parts = rest.split(':');
  const port = parts[0] ?? '';
  if (parts.length === 1) return { host, port };
  // The password is everything after the third colon: it may itself hold colons.
  if (parts.length >= 3) return { host, port, user: parts[1] ?? '', pass: parts.slice(2).join(':') };
  return null;
}

/** One line of a list: a proxy, a reason it is not one (never quoting it), or null to skip it. */
export function parseLine(raw: string, protocol: Protocol): LineResult {
  const line = raw.trim();
  if (line === '' || line.startsWith('#')) return null;
  if (line.includes('://')) return { ok: true, input: { url: line } };
  const p = bareParts(line);
  if (!p || !PORT.test(p.port)) {
    // user:pass@host:port without a scheme (a password may hold `@`, so host:port:user:pass came first).
    if (line.includes('@')) return { ok: true, input: { url: `${protocol}://${line}` } };
    if (!p) return { ok: false, reason: 'expected scheme://host:port, host:port or host:port:user:pass' };
    return { ok: false, reason: 'port must be an integer from 1 to 65535' };
  }
  const input: AddProxyInput = { url: `${protocol}://${p.host}:${p.port}` };
  if (p.user !== undefined) {
    if (p.user === '') return { ok: false, reason: 'empty username in host:port:user:pass' };
    input.username = p.user;
    input.password = p.pass === '' ? undefined : p.pass;
  }
  return { ok: true, input };
}

/** Parses a whole text list (the caller has already refused one over MAX_IMPORT_LINES). */
export function parseTextList(text: string, protocol: Protocol): ParsedList {
  const candidates: Candidate[] = [];
  const invalid: Invalid[] = [];
  const lines = splitLines(text);
  lines.forEach((raw, i) => {
    const r = parseLine(raw, protocol);
    if (r === null) return;
    if (r.ok) candidates.push({ line: i + 1, input: r.input });
    else invalid.push({ line: i + 1, reason: r.reason });
  });
  return { candidates, invalid, lines: lines.length };
}
