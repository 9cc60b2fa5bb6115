import { fieldError, RotaError } from '../errors/rota-error.ts';
import type { CallerSignal } from '../lib/abort.ts';
import type { DispatcherCache } from '../upstream/dispatchers.ts';
import type { Executor } from './executor.ts';
import type { CallPrelude } from './prelude.ts';
import { bufferedWork } from './works.ts';

/**
 * A whole request and its whole answer through the pool: `POST request` (http/routes/request.ts) and MCP's
 * fetch tool (mcp/local.ts) are this one call, so both get the same prelude (SSRF, policy rule, session),
 * engine, and request-log record (door `api`, its path, its bytes once over).
 */
export interface BufferedCallDeps {
  readonly prelude: CallPrelude;
  readonly executor: Executor;
  readonly dispatchers: DispatcherCache;
  readonly maxResponseBytes: number;
}

/** The call's target URL, or INVALID_URL naming where it was given (`['body', 'url']` for POST request). */
export function parseTarget(raw: string, loc: readonly string[]): URL {
  try {
    return new URL(raw);
  } catch {
    const item = {
      loc: [...loc],
      msg: 'Input should be a valid URL',
      type: 'url_parsing',
      input: null,
      ctx: {},
    };
    throw fieldError('INVALID_URL', 'Target URL does not parse', item);
  }
}

export interface BufferedCallInput {
  readonly url: URL;
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer | null;
  readonly timeoutS?: number | undefined;
  readonly sessionId?: string | undefined;
  /** geo-targeted's preference, upper case. */
  readonly country?: string | undefined;
  readonly signal?: CallerSignal | undefined;
}

/** The answer as both doors give it (schemas/request.ts ProxiedResponse, but the body). */
export interface BufferedAnswer {
  readonly fields: {
    status_code: number;
    headers: Record<string, string | string[]>;
    proxy_used: string;
    proxy_id: string;
    attempts: number;
    elapsed_ms: number;
    /** The session the call used, when it named one. */
    session_id?: string;
    /** The policy rule that applied, if any. */
    policy?: string;
  };
  readonly body: Buffer;
}

export async function bufferedCall(d: BufferedCallDeps, c: BufferedCallInput): Promise<BufferedAnswer> {
  const { url, method, headers, body } = c;
  const prepared = await d.prelude.prepare({
    target: url,
    work: (checked) =>
      bufferedWork(d.dispatchers, { url: checked, method, headers, body }, d.maxResponseBytes),
    timeoutS: c.timeoutS,
    sessionId: c.sessionId,
    country: c.country,
    ...(c.signal === undefined ? {} : { signal: c.signal }),
    door: 'api',
    scheme: url.protocol === 'https:' ? 'https' : 'http',
    path: url.pathname,
  });
  if (prepared instanceof RotaError) throw prepared;
  const t0 = performance.now();
  const r = await d.executor.execute(prepared);
  d.executor.ended(r.callId, body?.length ?? 0, r.response.body.length);
  const fields = {
    status_code: r.response.statusCode,
    headers: r.response.headers,
    proxy_used: r.proxy.url,
    proxy_id: r.proxy.record.id,
    attempts: r.attempts,
    elapsed_ms: Math.round((performance.now() - t0) * 100) / 100,
    ...(r.session === undefined ? {} : { session_id: r.session }),
    ...(r.rule === undefined ? {} : { policy: r.rule }),
  };
  return { fields, body: r.response.body };
}
