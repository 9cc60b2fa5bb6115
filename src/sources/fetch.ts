/**
 * Fetches a proxy source's list under the same SSRF rules as proxied requests, bounded every way a
 * hostile or broken source could push: a deadline for the whole answer, a byte cap (the connection is
 * cut past it), no redirect followed (one is reported), and every address the host name resolves to at
 * connect time checked again, so that a DNS answer changed after the check cannot lead inwards.
 */

import { lookup } from 'node:dns';
import type { LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import { RotaError } from '../errors/rota-error.ts';
import { type Agent, newAgent } from '../runtime/undici-agent.ts';
import type { SsrfGuard } from '../ssrf/guard.ts';

export interface FetchLimits {
  readonly maxBytes: number;
  readonly timeoutMs: number;
  /** Aborts the fetch (the source was replaced, or Rota is stopping). */
  readonly signal: AbortSignal;
  /** The source's own headers (a token), over the defaults. */
  readonly headers?: Readonly<Record<string, string>>;
}

export type Fetched = { ok: true; text: string } | { ok: false; error: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

class FetchFailure extends RotaError {
  constructor(message: string) {
    super('SOURCE_FETCH_FAILED', message);
  }
}

/** net.connect's lookup, refusing a name that resolves to any address the SSRF rules refuse. */
function guardedLookup(ssrf: SsrfGuard): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const refused = addresses.find((a) => ssrf.checkAddress(a.address) !== null);
      if (refused || addresses.length === 0) {
        return callback(new FetchFailure('the host resolves to an address the SSRF rules refuse'), '', 0);
      }
      if (options.all)
        return (callback as unknown as (e: null, a: typeof addresses) => void)(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}

/** One connection pool for every source; no keep-alive between fetches minutes apart. */
export function sourceAgent(ssrf: SsrfGuard, connectTimeoutMs: number): Agent {
  return newAgent({
    connect: { lookup: guardedLookup(ssrf), timeout: connectTimeoutMs },
    pipelining: 0,
    maxResponseSize: -1,
  });
}

/** Why a fetch failed, in words that never carry the URL (it may hold a token). */
function describe(err: unknown, timedOut: boolean, stopped: boolean, timeoutMs: number): string {
  if (stopped) return 'the fetch was cancelled';
  if (timedOut) return `no complete answer within ${timeoutMs / 1000} s`;
  if (err instanceof FetchFailure) return err.message;
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof FetchFailure) return cause.message;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string'
    ? `the source could not be reached (${code})`
    : 'the source could not be reached';
}

async function readCapped(body: AsyncIterable<Buffer>, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) throw new FetchFailure(`the answer is larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/** Header names in lower case, so that a source's `Accept` replaces the default instead of doubling it. */
function lowerCased(headers: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) out[k.toLowerCase()] = v;
  return out;
}

/** GETs the list; never throws. */
export async function fetchList(
  url: string,
  ssrf: SsrfGuard,
  agent: Agent,
  limits: FetchLimits,
): Promise<Fetched> {
  const verdict = await ssrf.check(url);
  if (!verdict.ok) return { ok: false, error: `refused by the SSRF rules: ${verdict.message}` };
  const deadline = AbortSignal.timeout(limits.timeoutMs);
  const signal = AbortSignal.any([limits.signal, deadline]);
  let body: Readable | null = null;
  try {
    // undici's request() comes with its whole index (fetch, WebSocket...): loaded on the first fetch of
    // a source, not in every process (src/runtime/undici-agent.ts).
    const { request } = await import('undici');
    const res = await request(verdict.url, {
      dispatcher: agent,
      method: 'GET',
      headers: {
        'user-agent': 'rota-proxy-source',
        accept: 'text/plain, text/csv, application/json, */*',
        ...lowerCased(limits.headers),
      },
      signal,
      headersTimeout: limits.timeoutMs,
      bodyTimeout: limits.timeoutMs,
    });
    body = res.body;
    // Destroying an unread answer makes it emit an abort error: expected, not a crash.
    body.on('error', () => {});
    if (res.statusCode >= 300 && res.statusCode < 400) {
      throw new FetchFailure(`redirect (HTTP ${res.statusCode}) not followed: give the final URL`);
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      throw new FetchFailure(`the source answered HTTP ${res.statusCode}`);
    }
    const declared = Number(res.headers['content-length']);
    if (declared > limits.maxBytes)
      throw new FetchFailure(`the answer is larger than ${limits.maxBytes} bytes`);
    const bytes = await readCapped(res.body, limits.maxBytes);
    try {
      return { ok: true, text: utf8.decode(bytes).replace(/^\uFEFF/, '') };
    } catch {
      throw new FetchFailure('the answer is not UTF-8 text');
    }
  } catch (err) {
    return { ok: false, error: describe(err, deadline.aborted, limits.signal.aborted, limits.timeoutMs) };
  } finally {
    // Cuts the connection of an answer not read to its end (an oversized or endless one).
    body?.destroy();
  }
}
