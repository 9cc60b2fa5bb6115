import { Buffer } from 'node:buffer';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { parseRate, type Rate } from './lib/rate.ts';
import { switchWord } from './lib/switch-words.ts';
import { validateAllowList } from './ssrf/allow.ts';

/**
 * Reading environment variables for config.ts: a Reader that collects every problem (so that start-up
 * reports them all at once, never only the first) and the parsers of the variables with a syntax of
 * their own (key, CIDR lists, URLs, allow-lists, status codes).
 */
export type Env = Readonly<Record<string, string | undefined>>;

export class Reader {
  readonly problems: string[] = [];
  private readonly env: Env;
  constructor(env: Env) {
    this.env = env;
  }

  raw(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  str(name: string, def: string): string {
    return this.raw(name) ?? def;
  }

  optStr(name: string): string | null {
    return this.raw(name) ?? null;
  }

  bool(name: string, def: boolean): boolean {
    const v = this.raw(name);
    if (v === undefined) return def;
    const word = switchWord(v);
    if (word !== null) return word === 'on';
    this.problems.push(`${name}: expected true or false, got ${JSON.stringify(v)}`);
    return def;
  }

  int(name: string, def: number, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) return def;
    const n = Number(v);
    if (!/^-?\d+$/.test(v) || !Number.isSafeInteger(n) || n < min || n > max) {
      this.problems.push(`${name}: expected an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
      return def;
    }
    return n;
  }

  num(name: string, def: number, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) return def;
    const n = Number(v);
    if (!Number.isFinite(n) || n < min || n > max) {
      this.problems.push(`${name}: expected a number from ${min} to ${max}, got ${JSON.stringify(v)}`);
      return def;
    }
    return n;
  }

  rate(name: string, def: Rate): Rate {
    const v = this.raw(name);
    if (v === undefined) return def;
    const r = parseRate(v);
    if (!r) this.problems.push(`${name}: expected N/unit (e.g. 100/minute), got ${JSON.stringify(v)}`);
    return r ?? def;
  }

  list(name: string): string[] {
    const v = this.raw(name);
    if (v === undefined) return [];
    return v
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  }
}

export function parseSecretKey(r: Reader): Buffer | null {
  const v = r.raw('ROTA_SECRET_KEY');
  if (v === undefined) return null;
  if (/^[0-9a-f]{64}$/i.test(v)) return Buffer.from(v, 'hex');
  const b = Buffer.from(v, 'base64');
  if (b.length === 32 && /^[A-Za-z0-9+/]+=*$/.test(v)) return b;
  r.problems.push('ROTA_SECRET_KEY: expected 32 bytes as 64 hex digits or base64 (value not shown)');
  return null;
}

export function parseCidrs(r: Reader, name: string): string[] {
  const out: string[] = [];
  for (const item of r.list(name)) {
    try {
      const cidr = item.includes('/') ? item : `${item}/${isIP(item) === 6 ? 128 : 32}`;
      ipaddr.parseCIDR(cidr);
      out.push(cidr);
    } catch {
      r.problems.push(`${name}: ${JSON.stringify(item)} is not an IP address or CIDR range`);
    }
  }
  return out;
}

export function parseUrlVar(r: Reader, name: string, def: string): string {
  const v = r.str(name, def);
  try {
    const u = new URL(v);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
  } catch {
    r.problems.push(`${name}: expected an http(s) URL, got ${JSON.stringify(v)}`);
  }
  return v;
}

export function parseAllowList(r: Reader, name: string): string[] {
  const list = r.list(name);
  for (const p of validateAllowList(list)) r.problems.push(`${name}: ${p}`);
  return list;
}

export function parseSsrfAllow(r: Reader): string[] {
  return parseAllowList(r, 'ROTA_SSRF_ALLOW');
}

export function parseStatusCodes(r: Reader, name: string, def: number[]): number[] {
  if (r.raw(name) === undefined) return def;
  const out: number[] = [];
  for (const item of r.list(name)) {
    const n = Number(item);
    if (!/^\d{3}$/.test(item) || n < 400 || n > 599) {
      r.problems.push(`${name}: ${JSON.stringify(item)} is not a status code from 400 to 599`);
    } else if (!out.includes(n)) out.push(n);
  }
  return out;
}
