/**
 * The CLI's only way to Rota: HTTP to ROTA_URL with ROTA_API_KEY (X-API-Key), through fetch. It shares
 * no code with the server on purpose: `rota` works against any Rota reachable over the network. Every
 * failure becomes a CliError carrying the server's error code and message, and the exit code to use.
 */

/** Exit codes: 0 done, 1 partly or not done (server said no, unreachable), 2 bad usage. */
export const EXIT_OK = 0;
export const EXIT_PARTIAL = 1;
export const EXIT_USAGE = 2;

export class CliError extends Error {
  readonly code: string;
  readonly exitCode: number;
  /** The socket error behind a CONNECTION_FAILED (ECONNREFUSED, EPIPE...). */
  readonly netCode: string | undefined;
  constructor(code: string, message: string, exitCode: number = EXIT_PARTIAL, netCode?: string) {
    super(message);
    this.code = code;
    this.exitCode = exitCode;
    this.netCode = netCode;
  }
}

interface ErrorEnvelope {
  status: 'error';
  error: { code: string; message: string; details?: unknown };
  detail?: { loc: (string | number)[]; msg: string }[];
}

function isErrorEnvelope(v: unknown): v is ErrorEnvelope {
  const e = (v as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return typeof e?.code === 'string' && typeof e.message === 'string';
}

/** The server's code and message; a validation error also names its first problem. */
function serverError(status: number, body: unknown): CliError {
  if (!isErrorEnvelope(body)) return new CliError(`HTTP_${status}`, `Rota answered HTTP ${status}`);
  const first = body.detail?.[0];
  const where =
    first && !body.error.message.includes(first.msg) ? ` (${first.loc.join('.')}: ${first.msg})` : '';
  return new CliError(body.error.code, `${body.error.message}${where}`);
}

export interface CallOptions {
  /** A JSON body. */
  json?: unknown;
  /** A raw body with its media type. */
  body?: { data: ReadableStream<Uint8Array> | Uint8Array | string; type: string };
  /** Statuses to hand back instead of throwing (e.g. 404 of an optional endpoint, 429 to wait out). */
  accept?: readonly number[];
}

export interface Answer<T> {
  readonly status: number;
  readonly headers: Headers;
  /** `data` of the envelope, or the whole body for endpoints without one (status, listeners). */
  readonly data: T;
}

export class ApiClient {
  readonly base: string;
  readonly #apiKey: string | undefined;

  constructor(base: string, apiKey: string | undefined) {
    this.base = base.replace(/\/+$/, '');
    this.#apiKey = apiKey === '' ? undefined : apiKey;
  }

  /** Sends a request; resolves with the response, or throws CliError when Rota cannot be reached. */
  async send(method: string, path: string, opts: CallOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.#apiKey) headers['x-api-key'] = this.#apiKey;
    let body: RequestInit['body'];
    if (opts.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(opts.json);
    } else if (opts.body) {
      headers['content-type'] = opts.body.type;
      body = opts.body.data;
    }
    try {
      return await fetch(`${this.base}${path}`, {
        method,
        headers,
        body,
        ...(body instanceof ReadableStream ? { duplex: 'half' as const } : {}),
        redirect: 'error',
      });
    } catch (err) {
      const raw = (err as { cause?: { code?: unknown } }).cause?.code;
      const code = typeof raw === 'string' ? raw : undefined;
      const why = code ? ` (${code})` : '';
      throw new CliError('CONNECTION_FAILED', `cannot reach Rota at ${this.base}${why}`, EXIT_PARTIAL, code);
    }
  }

  /** A JSON call: the envelope's `data` (or the bare body), or CliError with the server's code. */
  async call<T>(method: string, path: string, opts: CallOptions = {}): Promise<Answer<T>> {
    const res = await this.send(method, path, opts);
    const body = await readJson(res);
    if (!res.ok && !opts.accept?.includes(res.status)) throw serverError(res.status, body);
    const enveloped = body !== null && typeof body === 'object' && 'data' in body && 'status' in body;
    const data = (enveloped ? (body as { data: unknown }).data : body) as T;
    return { status: res.status, headers: res.headers, data };
  }
}

async function readJson(res: Response): Promise<unknown> {
  const text = await res.text();
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError('BAD_ANSWER', `Rota answered HTTP ${res.status} with a body that is not JSON`);
  }
}

/** Throws the server's error for a response that is not a success (a streamed call's first look). */
export async function ensureOk(res: Response): Promise<void> {
  if (!res.ok) throw serverError(res.status, await readJson(res));
}

/** ROTA_URL, checked: a usage error when it is not an http(s) URL. */
export function baseUrl(value: string): string {
  try {
    const u = new URL(value);
    if (u.protocol === 'http:' || u.protocol === 'https:') return value;
  } catch {
    // reported below
  }
  throw new CliError('USAGE', 'ROTA_URL / --url must be an http(s) URL', EXIT_USAGE);
}
