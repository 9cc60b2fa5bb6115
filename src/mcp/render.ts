import { isUtf8 } from 'node:buffer';
import type { FetchAnswer } from './backend.ts';

/**
 * The fetch tool's answer for an agent: the status, the headers that tell what came back (type, size,
 * where to, when to retry, caching), the proxy that carried it, and the body as text, cut at max_bytes;
 * a body that is not text (by its type, its encoding or its bytes) is a note of its type and size instead.
 */

const SHOWN_HEADERS = [
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'content-disposition',
  'location',
  'retry-after',
  'last-modified',
  'etag',
  'cache-control',
  'expires',
  'date',
  'server',
  'www-authenticate',
  'link',
];

const TEXT_TYPE = /^text\/|json|xml|javascript|ecmascript|x-www-form-urlencoded|yaml|csv|graphql/;

export interface FetchView {
  status: number;
  headers: Record<string, string>;
  proxy_used: string;
  proxy_id: string;
  attempts: number;
  elapsed_ms: number;
  /** The whole body's size, bytes. */
  bytes: number;
  /** The body as text (its first max_bytes), or null for binary content. */
  body: string | null;
  truncated: boolean;
  /** Why there is no body text, or what was cut. */
  note?: string;
}

function shownHeaders(h: FetchAnswer['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of SHOWN_HEADERS) {
    const v = h[name];
    if (v !== undefined) out[name] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

/** The first `max` bytes, less an incomplete UTF-8 sequence at the cut. */
function cutAt(body: Buffer, max: number): Buffer {
  if (body.length <= max) return body;
  let end = max;
  // Back over continuation bytes (10xxxxxx) to the start of the character the cut fell in.
  let back = 0;
  while (end - back > 0 && back < 3 && ((body[end - back - 1] ?? 0) & 0xc0) === 0x80) back++;
  const lead = body[end - back - 1] ?? 0;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (need > back + 1) end -= back + 1;
  return body.subarray(0, end);
}

/** Why the body is not shown as text, or null when it is text. */
function binaryReason(type: string, encoding: string, text: Buffer): string | null {
  if (encoding !== '' && encoding !== 'identity') return `encoded (${encoding})`;
  if (type !== '' && !TEXT_TYPE.test(type)) return type;
  if (!isUtf8(text) || text.includes(0)) return type === '' ? 'not UTF-8 text' : `${type}, not UTF-8 text`;
  return null;
}

export function renderFetch(a: FetchAnswer, maxBytes: number): FetchView {
  const headers = shownHeaders(a.headers);
  const type = (headers['content-type'] ?? '').toLowerCase();
  const encoding = (headers['content-encoding'] ?? '').toLowerCase();
  const text = cutAt(a.body, maxBytes);
  const truncated = text.length < a.body.length;
  const binary = binaryReason(type, encoding, text);
  const view: FetchView = {
    status: a.status_code,
    headers,
    proxy_used: a.proxy_used,
    proxy_id: a.proxy_id,
    attempts: a.attempts,
    elapsed_ms: a.elapsed_ms,
    bytes: a.body.length,
    body: binary === null ? text.toString('utf8') : null,
    truncated: binary === null && truncated,
  };
  if (binary !== null) view.note = `binary content (${binary}), ${a.body.length} bytes: not shown`;
  else if (truncated) view.note = `body cut at ${text.length} of ${a.body.length} bytes (max_bytes)`;
  return view;
}
