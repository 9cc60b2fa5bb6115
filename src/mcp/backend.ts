import { type RotaErrorCode, wireCode } from '../errors/codes.ts';
import type { RotateQuestion } from '../outbound/rotate.ts';

/**
 * What the MCP tools ask of Rota, and two ways to answer: in-process over the services (local.ts, behind
 * /mcp on the API port) and over the REST API (remote.ts, behind `rota mcp` on stdio). The tools
 * (tools.ts) are written once against this interface. Every value is what the REST API answers for the
 * same question (its `data`), so both ways give an agent the same shapes.
 */

/** A call through the pool: POST /api/v1/request's body, as the fetch tool passes it on. */
export interface FetchCall {
  readonly url: string;
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body?: string | null | undefined;
  readonly timeout?: number | undefined;
  readonly session_id?: string | undefined;
  readonly country?: string | undefined;
}

/** The target's answer through a proxy, its body as bytes (render.ts turns it into text or a note). */
export interface FetchAnswer {
  readonly status_code: number;
  readonly headers: Record<string, string | string[]>;
  readonly body: Buffer;
  readonly proxy_used: string;
  readonly proxy_id: string;
  readonly attempts: number;
  readonly elapsed_ms: number;
}

export interface ListProxiesQuery {
  readonly page: number;
  readonly page_size: number;
  readonly status_filter?: string | undefined;
}

/** GET /api/v1/rotate's query (outbound/rotate.ts). */
export type RotateQuery = RotateQuestion;

export interface BansListQuery {
  readonly host?: string | undefined;
  readonly page: number;
  readonly page_size: number;
}

/** A ban reported by hand: POST /api/v1/bans. */
export interface BanReport {
  readonly proxy_id: string;
  readonly host: string;
  readonly cooldown_s?: number | undefined;
  /** For a gateway: the call's session, whose provider session's exit was banned. */
  readonly session_id?: string | undefined;
}

/** An answer of the REST API's shape (its envelope's `data`), as JSON. */
export type Json = unknown;

export interface RotaBackend {
  fetch(call: FetchCall): Promise<FetchAnswer>;
  /** GET /api/v1/status. */
  poolStatus(): Promise<Json>;
  /** GET /api/v1/proxies. */
  listProxies(q: ListProxiesQuery): Promise<Json>;
  /** GET /api/v1/rotate. */
  rotate(q: RotateQuery): Promise<Json>;
  /** POST /api/v1/proxies/health-check. */
  checkProxies(ids: readonly string[] | undefined): Promise<Json>;
  /** GET /api/v1/bans. */
  listBans(q: BansListQuery): Promise<Json>;
  /** POST /api/v1/bans. */
  reportBan(b: BanReport): Promise<Json>;
  /** POST /api/v1/proxies: the body as the REST API takes it. */
  addProxy(body: Record<string, unknown>): Promise<Json>;
  /** DELETE /api/v1/proxies/{id}. */
  removeProxy(id: string): Promise<void>;
  /** GET /api/v1/config. */
  config(): Promise<Json>;
}

/**
 * A tool call Rota refused or could not complete: the code is one of the registry's (errors/codes.ts),
 * shown by its wire name as the REST API sends it, with the same message and details.
 */
export class ToolFailure extends Error {
  /** The wire name of the code. */
  readonly code: string;
  readonly details: unknown;
  /** A registry code, or (`relayed`) a wire code as another Rota sent it. */
  constructor(code: RotaErrorCode | { readonly wire: string }, message: string, details: unknown = null) {
    super(message);
    this.name = 'ToolFailure';
    this.code = typeof code === 'string' ? wireCode(code) : code.wire;
    this.details = details;
  }

  /**
   * A failure another Rota answered (`rota mcp` over the REST API), its wire code passed on as it came:
   * a newer server may send a code this one does not know.
   */
  static relayed(wire: string, message: string, details: unknown = null): ToolFailure {
    return new ToolFailure({ wire }, message, details);
  }
}
