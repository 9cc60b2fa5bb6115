/**
 * The structured list formats: NDJSON (bulk import: one `POST proxies` body per line, validated by the
 * same schema), and CSV and JSON (proxy sources, read tolerantly: providers publish many shapes).
 * Each yields the ParsedList of lines.ts; a reason never quotes the line, which may hold a password.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import sjson from 'secure-json-parse';
import type { AddProxyInput } from '../pool/pool.ts';
import { PROTOCOLS, type Protocol } from '../pool/types.ts';
import { AddProxyBody, type AddProxyBodyT, READ_ONLY_FIELDS } from '../schemas/proxy.ts';
import {
  type Candidate,
  type Invalid,
  type LineResult,
  type ParsedList,
  parseLine,
  splitLines,
} from './lines.ts';

// The body validator's options (http/validator.ts): JSON types are not coerced. `password` is a format
// for documentation only. Compiled on the first import, not when the module loads: compiling it at load
// took ~60 ms of every start-up's CPU (--cpu-prof to the first /ready) for a route most runs never call.
let checkBody: ValidateFunction<AddProxyBodyT> | undefined;
function bodyValidator(): ValidateFunction<AddProxyBodyT> {
  checkBody ??= new Ajv({
    strict: false,
    useDefaults: true,
    coerceTypes: false,
    formats: { password: true },
  }).compile<AddProxyBodyT>(AddProxyBody);
  return checkBody;
}

function schemaReason(err: ErrorObject | undefined): string {
  if (!err) return 'not a valid proxy object';
  const at = err.instancePath === '' ? 'object' : err.instancePath.slice(1).replaceAll('/', '.');
  const extra = err.params as { additionalProperty?: unknown };
  const name =
    typeof extra.additionalProperty === 'string' ? ` (${extra.additionalProperty.slice(0, 64)})` : '';
  return `${at}: ${err.message ?? 'invalid'}${name}`;
}

function parseJsonText(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return {
      ok: true,
      value: sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }),
    };
  } catch {
    return { ok: false };
  }
}

const READ_ONLY = new Set<string>(READ_ONLY_FIELDS);

/**
 * A line as `GET proxies/export` writes it, made a `POST proxies` body: the fields the server sets (id,
 * status, stats...) and the empty ones (`country: null`) are dropped, so that what export writes, import
 * takes back. Any other field is checked by the schema as sent.
 */
function importable(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (!READ_ONLY.has(k) && v !== null) out[k] = v;
  return out;
}

/** One `POST proxies` body (or an exported line), validated by the route's own schema, or why it is not one. */
function bodyItem(value: unknown): LineResult {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, reason: 'expected a JSON object' };
  }
  const body = importable(value as Record<string, unknown>);
  const check = bodyValidator();
  if (!check(body)) return { ok: false, reason: schemaReason(check.errors?.[0]) };
  return { ok: true, input: body };
}

/** One NDJSON line: a `POST proxies` body, a reason it is not one, or null (blank, `#`). */
function ndjsonLine(raw: string): LineResult {
  const line = raw.trim();
  if (line === '' || line.startsWith('#')) return null;
  const parsed = parseJsonText(line);
  return parsed.ok ? bodyItem(parsed.value) : { ok: false, reason: 'not valid JSON' };
}

/** A JSON array of `POST proxies` bodies; items are numbered from 1 as lines. */
export function parseBodyArray(items: readonly unknown[]): ParsedList {
  const candidates: Candidate[] = [];
  const invalid: Invalid[] = [];
  items.forEach((item, i) => {
    const r = bodyItem(item);
    if (r?.ok) candidates.push({ line: i + 1, input: r.input });
    else if (r) invalid.push({ line: i + 1, reason: r.reason });
  });
  return { candidates, invalid, lines: items.length };
}

/** NDJSON of `POST proxies` bodies; blank and `#` lines are skipped. */
export function parseNdjsonList(text: string): ParsedList {
  const candidates: Candidate[] = [];
  const invalid: Invalid[] = [];
  const lines = splitLines(text);
  lines.forEach((raw, i) => {
    const r = ndjsonLine(raw);
    if (r === null) return;
    if (r.ok) candidates.push({ line: i + 1, input: r.input });
    else invalid.push({ line: i + 1, reason: r.reason });
  });
  return { candidates, invalid, lines: lines.length };
}

const COLUMN_NAMES: Record<string, readonly string[]> = {
  url: ['url', 'proxy', 'proxy_url', 'uri'],
  host: ['host', 'ip', 'address', 'ip_address', 'server', 'hostname', 'proxy_host'],
  port: ['port', 'proxy_port'],
  protocol: ['protocol', 'type', 'scheme', 'proxy_type'],
  username: ['username', 'user', 'login'],
  password: ['password', 'pass', 'pwd'],
  country: ['country', 'country_code', 'countrycode', 'cc', 'iso'],
};

type Fields = Partial<Record<keyof typeof COLUMN_NAMES, string>>;

/** A protocol as providers write it (`HTTP`, `socks`), or null when Rota has no such scheme. */
function protocolOf(v: string | undefined, fallback: Protocol): Protocol | null {
  if (v === undefined || v.trim() === '') return fallback;
  const p = v
    .trim()
    .toLowerCase()
    .replace(/:\/\/$/, '');
  if (p === 'socks') return 'socks5';
  return (PROTOCOLS as readonly string[]).includes(p) ? (p as Protocol) : null;
}

/** One record (a CSV row, a JSON object) to an input: host+port, or url; unknown countries are dropped. */
function fromFields(
  f: Fields,
  fallback: Protocol,
): { ok: true; input: AddProxyInput } | { ok: false; reason: string } {
  const protocol = protocolOf(f.protocol, fallback);
  if (protocol === null) return { ok: false, reason: 'unsupported protocol' };
  let input: AddProxyInput;
  if (f.url) {
    const r = parseLine(f.url, protocol);
    if (r === null || !r.ok) return { ok: false, reason: r?.reason ?? 'empty url' };
    input = r.input;
  } else {
    const host = f.host?.trim() ?? '';
    const port = f.port?.trim() ?? '';
    if (host === '' || port === '') return { ok: false, reason: 'expected host and port' };
    input = {
      url: `${protocol}://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`,
    };
  }
  if (f.username?.trim()) input.username = f.username.trim();
  if (f.password) input.password = f.password;
  const cc = f.country?.trim();
  if (cc && /^[A-Za-z]{2}$/.test(cc)) input.country = cc.toUpperCase();
  return { ok: true, input };
}

/** One CSV row: quoted fields with `""` escapes; a row is one line. */
function csvFields(line: string, sep: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cur += c;
    } else if (c === '"' && cur.trim() === '') {
      quoted = true;
      cur = '';
    } else if (c === sep) {
      out.push(cur.trim());
      cur = '';
    } else cur += c;
  }
  out.push(quoted ? cur : cur.trim());
  return out;
}

/** Which field each column holds; without a recognisable header, rows are host,port[,user,pass]. */
function csvColumns(header: string[]): (keyof Fields | null)[] | null {
  const cols = header.map((h) => {
    const name = h
      .trim()
      .toLowerCase()
      .replace(/[\s-]+/g, '_');
    const hit = Object.entries(COLUMN_NAMES).find(([, names]) => names.includes(name));
    return hit ? (hit[0] as keyof Fields) : null;
  });
  const has = (k: keyof Fields) => cols.includes(k);
  return has('url') || (has('host') && has('port')) ? cols : null;
}

/** CSV with a header row (`host`/`ip`, `port`, optional protocol, username, password, country). */
export function parseCsvList(text: string, protocol: Protocol): ParsedList {
  const candidates: Candidate[] = [];
  const invalid: Invalid[] = [];
  const lines = splitLines(text.replace(/^\uFEFF/, ''));
  const first = lines.findIndex((l) => l.trim() !== '' && !l.trim().startsWith('#'));
  const sample = first === -1 ? '' : (lines[first] ?? '');
  const sep = [',', ';', '\t', '|'].reduce((a, b) =>
    sample.split(b).length > sample.split(a).length ? b : a,
  );
  const header = first === -1 ? null : csvColumns(csvFields(sample, sep));
  const positional: (keyof Fields)[] = ['host', 'port', 'username', 'password'];
  lines.forEach((raw, i) => {
    if ((header && i === first) || raw.trim() === '' || raw.trim().startsWith('#')) return;
    const values = csvFields(raw, sep);
    const fields: Fields = {};
    values.forEach((v, c) => {
      const key = header ? header[c] : positional[c];
      if (key && v !== '') fields[key] = v;
    });
    const r = fromFields(fields, protocol);
    if (r.ok) candidates.push({ line: i + 1, input: r.input });
    else invalid.push({ line: i + 1, reason: r.reason });
  });
  return { candidates, invalid, lines: lines.length };
}

function objectFields(o: Record<string, unknown>): Fields {
  const fields: Fields = {};
  for (const [k, v] of Object.entries(o)) {
    if (typeof v !== 'string' && typeof v !== 'number') continue;
    const name = k.toLowerCase();
    const hit = Object.entries(COLUMN_NAMES).find(([, names]) => names.includes(name));
    if (hit) fields[hit[0] as keyof Fields] = String(v);
  }
  return fields;
}

/**
 * JSON: an array (or an object holding one under `proxies` or `data`) of strings in the text forms or of
 * objects with `url`, or `host`/`ip` and `port`. Items are numbered from 1 as lines.
 */
export function parseJsonList(text: string, protocol: Protocol): ParsedList | { error: string } {
  const parsed = parseJsonText(text.replace(/^\uFEFF/, ''));
  if (!parsed.ok) return { error: 'the answer is not valid JSON' };
  let items = parsed.value;
  if (items !== null && typeof items === 'object' && !Array.isArray(items)) {
    const o = items as Record<string, unknown>;
    items = Array.isArray(o.proxies) ? o.proxies : o.data;
  }
  if (!Array.isArray(items)) return { error: 'expected a JSON array of proxies' };
  const candidates: Candidate[] = [];
  const invalid: Invalid[] = [];
  items.forEach((item: unknown, i) => {
    const r =
      typeof item === 'string'
        ? parseLine(item, protocol)
        : item !== null && typeof item === 'object' && !Array.isArray(item)
          ? fromFields(objectFields(item as Record<string, unknown>), protocol)
          : { ok: false as const, reason: 'expected a string or an object' };
    if (r === null) return;
    if (r.ok) candidates.push({ line: i + 1, input: r.input });
    else invalid.push({ line: i + 1, reason: r.reason });
  });
  return { candidates, invalid, lines: items.length };
}
