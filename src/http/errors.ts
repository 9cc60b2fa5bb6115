/**
 * The one registry of API error codes. Each code has exactly one HTTP status; handlers throw these and
 * the error handler turns them into the envelope. `details` travels on the instance.
 */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 422,
  INVALID_URL: 400,
  INVALID_PROXY_FORMAT: 400,
  INVALID_METHOD: 422,
  INVALID_TIMEOUT: 422,
  PROXY_POOL_EMPTY: 503,
  PROXY_FAILOVER_EXHAUSTED: 502,
  PROXY_NOT_FOUND: 404,
  PROXY_ALREADY_EXISTS: 409,
  PROXY_ERROR: 502,
  TARGET_UNREACHABLE: 504,
  REQUEST_TIMEOUT: 504,
  REQUEST_FAILED: 502,
  CONFIGURATION_ERROR: 500,
  INVALID_CONFIGURATION: 400,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  // A write refused because the shared database (PostgreSQL) is unreachable; reads go on from memory.
  STORAGE_UNAVAILABLE: 503,
  UNAUTHORIZED: 401,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMIT_EXCEEDED: 429,
  // Refused by Node's HTTP parser before a request exists (client-error.ts).
  BAD_REQUEST: 400,
  CLIENT_TIMEOUT: 408,
  REQUEST_HEADERS_TOO_LARGE: 431,
  // A client past ROTA_MAX_CONNECTIONS_PER_IP or ROTA_MAX_CONNECTIONS (net/connection-guard.ts).
  TOO_MANY_CONNECTIONS: 503,
  // The Host header names a host not in ROTA_ALLOWED_HOSTS (origin-guard.ts).
  MISDIRECTED_REQUEST: 421,
  // A state-changing request from another web origin (origin-guard.ts).
  FORBIDDEN_ORIGIN: 403,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface DetailItem {
  loc: (string | number)[];
  msg: string;
  type: string;
  input: unknown;
  ctx: Record<string, unknown>;
}

/** An API error: a stable code, a message safe to show, optional details and validation items. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly details: unknown;
  readonly detail: DetailItem[] | undefined;
  readonly headers: Record<string, string> | undefined;
  constructor(
    code: ErrorCode,
    message: string,
    opts: {
      details?: unknown;
      detail?: DetailItem[];
      headers?: Record<string, string>;
      status?: number;
    } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.statusCode = opts.status ?? ERROR_STATUS[code];
    this.details = opts.details ?? null;
    this.detail = opts.detail;
    this.headers = opts.headers;
  }
}
