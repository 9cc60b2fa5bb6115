/**
 * Calls to Rota's API from the dashboard. The API key lives in sessionStorage (this tab only, gone when
 * it closes) and goes out as X-API-Key on every call; it is never written into the page. Every answer,
 * success or error, becomes one `Result` so that callers handle 401 and 429 in one place.
 */

const KEY_ITEM = 'rota.dashboard.apiKey';

export type Result<T> =
  | { ok: true; status: number; data: T }
  | { ok: false; status: number; code: string; message: string; retryAfterS: number | null };

interface Envelope {
  data?: unknown;
  error?: { code?: unknown; message?: unknown } | null;
}

/** Where 401 and 429 are reported, whichever call met them. */
export interface ApiHooks {
  unauthorized(): void;
}

export class Api {
  #key: string | null;
  #hooks: ApiHooks | null = null;

  constructor() {
    this.#key = sessionStorage.getItem(KEY_ITEM);
  }

  get hasKey(): boolean {
    return this.#key !== null;
  }

  setHooks(hooks: ApiHooks): void {
    this.#hooks = hooks;
  }

  /** Uses `key` for the calls that follow; kept for the tab only once `remember` is called. */
  useKey(key: string | null): void {
    this.#key = key;
  }

  remember(): void {
    if (this.#key !== null) sessionStorage.setItem(KEY_ITEM, this.#key);
  }

  forget(): void {
    this.#key = null;
    sessionStorage.removeItem(KEY_ITEM);
  }

  get<T>(path: string, params?: Record<string, string | number | undefined>): Promise<Result<T>> {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(params ?? {})) if (v !== undefined && v !== '') qs.set(k, String(v));
    const q = qs.toString();
    return this.call<T>('GET', q ? `${path}?${q}` : path);
  }

  /** Tries a key: its 401 is the caller's answer, not a reason to lock the page. */
  check<T>(path: string): Promise<Result<T>> {
    return this.call<T>('GET', path, undefined, undefined, false);
  }

  send<T>(method: 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<Result<T>> {
    return this.call<T>(
      method,
      path,
      body === undefined ? undefined : JSON.stringify(body),
      'application/json',
    );
  }

  sendText<T>(path: string, text: string): Promise<Result<T>> {
    return this.call<T>('POST', path, text, 'text/plain; charset=utf-8');
  }

  async call<T>(
    method: string,
    path: string,
    body?: string,
    type?: string,
    notify = true,
  ): Promise<Result<T>> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.#key !== null) headers['x-api-key'] = this.#key;
    if (body !== undefined && type) headers['content-type'] = type;
    let res: Response;
    try {
      res = await fetch(path, { method, headers, body, cache: 'no-store', credentials: 'omit' });
    } catch {
      return { ok: false, status: 0, code: 'NETWORK', message: 'Rota did not answer', retryAfterS: null };
    }
    const parsed = await readJson(res);
    if (res.ok) return { ok: true, status: res.status, data: parsed?.data as T };
    if (res.status === 401 && notify) this.#hooks?.unauthorized();
    const retry = Number(res.headers.get('retry-after'));
    return {
      ok: false,
      status: res.status,
      code: typeof parsed?.error?.code === 'string' ? parsed.error.code : `HTTP_${res.status}`,
      message: typeof parsed?.error?.message === 'string' ? parsed.error.message : res.statusText,
      retryAfterS: Number.isFinite(retry) && retry > 0 ? retry : null,
    };
  }
}

async function readJson(res: Response): Promise<Envelope | null> {
  if (res.status === 204) return null;
  try {
    return (await res.json()) as Envelope;
  } catch {
    return null;
  }
}

/** One line for a failed call, for the message next to the control that made it. */
export function describeError(r: {
  status: number;
  code: string;
  message: string;
  retryAfterS: number | null;
}): string {
  if (r.status === 0) return 'Rota did not answer (network error).';
  if (r.status === 429) return `Rate limited: try again in ${r.retryAfterS ?? 'a few'} s.`;
  return `${r.message} (${r.status} ${r.code})`;
}
