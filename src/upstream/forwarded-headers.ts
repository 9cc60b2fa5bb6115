/*
 * A client's request headers as they travel on to the target, for every door (the HTTP listener's
 * absolute-URI requests and inspected HTTPS from req.rawHeaders, POST /api/v1/request from its JSON
 * object): name/value pairs in the client's order and spelling, which undici writes as given.
 *
 *   dropped:  hop-by-hop (Connection, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade), the names
 *             Connection lists, Proxy-* (the client's proxy credentials and options), X-Rota-* (the
 *             client's parameters to Rota), Expect (node:http answers 100-continue itself)
 *   slots:    Host and Connection become `x-rota-slot: <the client's spelling>` where they stood, so
 *             that head-order.ts puts undici's own Host and Connection lines there
 *
 * Names are compared without lowering them into new strings: most headers keep their name as is.
 */
import { HEAD_ORDER, SLOT } from '../runtime/head-order.ts';

const KEEP = 0;
const DROP = 1;
const HOST = 2;
const CONNECTION = 3;
const CONTENT_LENGTH = 4;

/** Whether `name` starts with `lower` (ASCII lower-case), ignoring case. */
function startsWithCi(name: string, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) {
    const c = name.charCodeAt(i);
    if ((c >= 65 && c <= 90 ? c | 32 : c) !== lower.charCodeAt(i)) return false;
  }
  return true;
}

function kind(name: string): number {
  switch (name.length) {
    case 2:
      if (startsWithCi(name, 'te')) return DROP;
      break;
    case 4:
      if (startsWithCi(name, 'host')) return HOST;
      break;
    case 6:
      if (startsWithCi(name, 'expect')) return DROP;
      break;
    case 7:
      if (startsWithCi(name, 'trailer') || startsWithCi(name, 'upgrade')) return DROP;
      break;
    case 10:
      if (startsWithCi(name, 'connection')) return CONNECTION;
      if (startsWithCi(name, 'keep-alive')) return DROP;
      break;
    case 14:
      if (startsWithCi(name, 'content-length')) return CONTENT_LENGTH;
      break;
    case 17:
      if (startsWithCi(name, 'transfer-encoding')) return DROP;
      break;
  }
  if (name.length > 6 && startsWithCi(name, 'proxy-')) return DROP;
  return name.length > 7 && startsWithCi(name, 'x-rota-') ? DROP : KEEP;
}

/** The names a Connection value lists, lower-case, other than `keep-alive` (hop-by-hop anyway); null: none. */
function listedIn(value: string, listed: string[] | null): string[] | null {
  if (value.length === 10 && startsWithCi(value, 'keep-alive')) return listed;
  const out = listed ?? [];
  for (const token of value.split(',')) {
    const name = token.trim().toLowerCase();
    if (name !== '' && name !== 'keep-alive') out.push(name);
  }
  return out.length === 0 ? null : out;
}

export interface ForwardOptions {
  /** Leave Content-Length out (a buffered body: undici writes its length). */
  readonly dropContentLength?: boolean;
}

/**
 * `pairs` (name, value, name, value, ...) without what never travels on, Host and Connection as slots.
 * The only array made is the result (and a list of names when Connection names any but keep-alive).
 */
export function forwardedHeaders(pairs: readonly string[], opts: ForwardOptions = {}): string[] {
  const out: string[] = [];
  let listed: string[] | null = null;
  let host = false;
  let connection = false;
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const name = pairs[i] as string;
    const value = pairs[i + 1] as string;
    const k = kind(name);
    if (k === KEEP || (k === CONTENT_LENGTH && opts.dropContentLength !== true)) out.push(name, value);
    else if (k === HOST && !host) {
      host = true;
      if (HEAD_ORDER) out.push(SLOT, name);
    } else if (k === CONNECTION) {
      if (!connection && HEAD_ORDER) out.push(SLOT, name);
      connection = true;
      listed = listedIn(value, listed);
    }
  }
  return listed === null ? out : withoutListed(out, listed);
}

/** The rare request whose Connection names headers of its own: those end at this hop too. */
function withoutListed(pairs: string[], listed: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const name = pairs[i] as string;
    if (name === SLOT || !listed.includes(name.toLowerCase())) out.push(name, pairs[i + 1] as string);
  }
  return out;
}

/** A JSON object of headers (POST /api/v1/request) as pairs, in the object's order. */
export function objectPairs(headers: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  for (const name of Object.keys(headers)) out.push(name, headers[name] as string);
  return out;
}
