/**
 * Headers a source's fetch sends (a token: `Authorization: Bearer ...`). Their values are secrets: kept
 * sealed in the store (store.sealSecret, bound to the source and header name), never answered (each is
 * shown as `***`) nor logged. `***` sent back in `PUT sources` keeps the value already stored under that
 * source and header name, so that a list read, edited and put back keeps its tokens.
 */
import { Type } from 'typebox';
import { MASK } from '../audit/redact.ts';
import type { DetailItem } from '../errors/rota-error.ts';
import { HEADER_NAME_PATTERN, HEADER_VALUE_PATTERN } from '../schemas/patterns.ts';
import type { ProxyStore } from '../store/types.ts';

export const MAX_SOURCE_HEADERS = 16;
export const MAX_HEADER_NAME = 128;
export const MAX_HEADER_VALUE = 4096;
/** Names and values of one source's headers together. */
export const MAX_HEADERS_BYTES = 16_384;
/** What a value is shown as, and what keeps the stored value when sent back. */
export const KEPT = MASK;

/** Set by Rota or by the connection itself: a source cannot send its own. */
const RESERVED = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'proxy-connection',
  'upgrade',
  'te',
  'trailer',
  'expect',
]);

export const SourceHeadersInput = Type.Unsafe<Record<string, string>>({
  type: 'object',
  propertyNames: { pattern: HEADER_NAME_PATTERN, maxLength: MAX_HEADER_NAME },
  additionalProperties: Type.String({ maxLength: MAX_HEADER_VALUE, pattern: HEADER_VALUE_PATTERN }),
  maxProperties: MAX_SOURCE_HEADERS,
  description:
    'Sent with each fetch of the list (e.g. `Authorization`), stored encrypted and never shown. RFC 9110 ' +
    `token names, RFC 9110 field values (tab, space, visible ASCII, 0x80-0xFF), at most ${MAX_HEADERS_BYTES} bytes together; not Host, ` +
    `Content-Length, Transfer-Encoding or hop-by-hop headers. \`${KEPT}\` keeps the value stored under ` +
    'the same source and header name',
});

export const SourceHeadersShown = Type.Record(Type.String(), Type.String(), {
  description: `Names of the headers sent with each fetch; every value is shown as \`${KEPT}\``,
});

export const SourceHeadersStored = Type.Record(Type.String(), Type.String());

function problem(loc: (string | number)[], msg: string): DetailItem {
  // The value is never echoed: it is a secret.
  return { loc: ['body', ...loc], msg, type: 'value_error', input: null, ctx: {} };
}

function storedValue(current: readonly SourceConfig[], source: string, header: string): string | undefined {
  const s = current.find((c) => c.name.toLowerCase() === source.toLowerCase());
  const key = s && Object.keys(s.headers).find((k) => k.toLowerCase() === header.toLowerCase());
  return key === undefined ? undefined : s?.headers[key];
}

interface SourceConfig {
  readonly name: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** What the schema cannot say about source `i`'s headers. */
export function headerProblems(s: unknown, i: number, current: readonly SourceConfig[]): DetailItem[] {
  if (s === null || typeof s !== 'object') return [];
  const { name, headers } = s as { name?: unknown; headers?: unknown };
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) return [];
  const out: DetailItem[] = [];
  const seen = new Set<string>();
  let bytes = 0;
  for (const [header, value] of Object.entries(headers)) {
    const lower = header.toLowerCase();
    const at = [i, 'headers', header.slice(0, MAX_HEADER_NAME)];
    if (RESERVED.has(lower)) out.push(problem(at, `${header.slice(0, 64)} is not a header a source may set`));
    if (seen.has(lower)) out.push(problem(at, 'Repeats a header name (names are case-insensitive)'));
    seen.add(lower);
    if (typeof value !== 'string') continue;
    bytes += Buffer.byteLength(header) + Buffer.byteLength(value);
    if (value === KEPT && (typeof name !== 'string' || storedValue(current, name, header) === undefined)) {
      out.push(problem(at, `${KEPT} keeps a stored value, and this source has none under this name`));
    }
  }
  if (bytes > MAX_HEADERS_BYTES) {
    out.push(problem([i, 'headers'], `Headers take more than ${MAX_HEADERS_BYTES} bytes together`));
  }
  return out;
}

/** The headers with each `***` replaced by the value stored under the same source and header name. */
export function withKeptHeaders<T extends SourceConfig>(config: T, current: readonly SourceConfig[]): T {
  const headers: Record<string, string> = {};
  for (const [header, value] of Object.entries(config.headers)) {
    const kept = value === KEPT ? storedValue(current, config.name, header) : value;
    if (kept !== undefined) headers[header] = kept;
  }
  return { ...config, headers };
}

/** Names kept, values masked: what an answer shows. */
export function shownHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.keys(headers).map((k) => [k, KEPT]));
}

function context(source: string, header: string): string {
  return `source/${source}/header/${header.toLowerCase()}`;
}

export function sealHeaders(
  store: ProxyStore,
  source: string,
  headers: Readonly<Record<string, string>>,
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).map(([k, v]) => [k, store.sealSecret(v, context(source, k))]),
  );
}

/** The values in clear, or null when one does not open (another key, damaged data). */
export function openHeaders(
  store: ProxyStore,
  source: string,
  sealed: Readonly<Record<string, string>>,
): Record<string, string> | null {
  try {
    return Object.fromEntries(
      Object.entries(sealed).map(([k, v]) => [k, store.openSecret(v, context(source, k))]),
    );
  } catch {
    return null;
  }
}
