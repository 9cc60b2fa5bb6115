import { ApiClient, CliError } from '../cli/client.ts';
import {
  type BanReport,
  type BansListQuery,
  type FetchAnswer,
  type FetchCall,
  type Json,
  type ListProxiesQuery,
  type RotaBackend,
  type RotateQuery,
  ToolFailure,
} from './backend.ts';

/**
 * The backend of `rota mcp`: a running Rota's REST API at ROTA_URL, with ROTA_API_KEY, through the CLI's
 * client (cli/client.ts). The server decides everything (validation, auth, limits, SSRF); its error
 * envelope becomes the tool error with the same code, message and details.
 */

interface Envelope {
  data?: unknown;
  error?: { code?: unknown; message?: unknown; details?: unknown };
  detail?: unknown;
}

interface ProxiedData {
  status_code: number;
  headers: Record<string, string | string[]>;
  body: string;
  body_encoding: 'utf8' | 'base64';
  proxy_used: string;
  proxy_id: string;
  attempts: number;
  elapsed_ms: number;
}

function query(q: Record<string, string | number | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined) p.set(k, String(v));
  const s = p.toString();
  return s === '' ? '' : `?${s}`;
}

export class RemoteBackend implements RotaBackend {
  readonly #api: ApiClient;

  constructor(baseUrl: string, apiKey: string | undefined) {
    this.#api = new ApiClient(baseUrl, apiKey);
  }

  /** The envelope's `data` (or the bare body of endpoints without one); the server's error as a ToolFailure. */
  async #call(method: string, path: string, json?: unknown): Promise<Json> {
    let res: Response;
    try {
      res = await this.#api.send(method, path, json === undefined ? {} : { json });
    } catch (err) {
      if (err instanceof CliError)
        throw new ToolFailure('SERVICE_UNAVAILABLE', err.message, { reason: err.code });
      throw err;
    }
    const text = await res.text();
    let body: Envelope | null = null;
    try {
      body = text === '' ? null : (JSON.parse(text) as Envelope);
    } catch {
      throw new ToolFailure(
        'SERVICE_UNAVAILABLE',
        `Rota answered HTTP ${res.status} with a body that is not JSON`,
      );
    }
    if (!res.ok) {
      const e = body?.error;
      if (typeof e?.code !== 'string')
        throw new ToolFailure('SERVICE_UNAVAILABLE', `Rota answered HTTP ${res.status}`);
      throw ToolFailure.relayed(e.code, String(e.message ?? ''), body?.detail ?? e.details ?? null);
    }
    return body !== null && typeof body === 'object' && 'data' in body && 'status' in body ? body.data : body;
  }

  async fetch(c: FetchCall): Promise<FetchAnswer> {
    const d = (await this.#call('POST', '/api/v1/request', c)) as ProxiedData;
    return {
      status_code: d.status_code,
      headers: d.headers,
      body: Buffer.from(d.body, d.body_encoding === 'base64' ? 'base64' : 'utf8'),
      proxy_used: d.proxy_used,
      proxy_id: d.proxy_id,
      attempts: d.attempts,
      elapsed_ms: d.elapsed_ms,
    };
  }

  poolStatus(): Promise<Json> {
    return this.#call('GET', '/api/v1/status');
  }

  listProxies(q: ListProxiesQuery): Promise<Json> {
    return this.#call('GET', `/api/v1/proxies${query({ ...q })}`);
  }

  rotate(q: RotateQuery): Promise<Json> {
    return this.#call('GET', `/api/v1/rotate${query({ ...q })}`);
  }

  checkProxies(ids: readonly string[] | undefined): Promise<Json> {
    return this.#call('POST', '/api/v1/proxies/health-check', ids === undefined ? {} : { proxy_ids: ids });
  }

  listBans(q: BansListQuery): Promise<Json> {
    return this.#call('GET', `/api/v1/bans${query({ ...q })}`);
  }

  reportBan(b: BanReport): Promise<Json> {
    return this.#call('POST', '/api/v1/bans', b);
  }

  addProxy(body: Record<string, unknown>): Promise<Json> {
    return this.#call('POST', '/api/v1/proxies', body);
  }

  async removeProxy(id: string): Promise<void> {
    await this.#call('DELETE', `/api/v1/proxies/${encodeURIComponent(id)}`);
  }

  config(): Promise<Json> {
    return this.#call('GET', '/api/v1/config');
  }
}
