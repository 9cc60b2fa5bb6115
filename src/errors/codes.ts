/**
 * The one registry of Rota's error codes: for each, the HTTP status every door answers with, the SOCKS5
 * reply the SOCKS5 listener answers with, and a stable message (a throw site may say more).
 *
 *   engine, pool, store, sources, health ──throw──▶ RotaError { code }   (rota-error.ts)
 *   http/     renders it as the JSON envelope (http/envelope.ts), status from here
 *   forward/  renders it as the status with `X-Rota-Error: <code>`, or this SOCKS5 reply (forward/answers.ts)
 *
 * A code has exactly one status. `wire` is the name clients see where the REST interface gives two
 * situations one name with two statuses: each situation is a code of its own here, and clients keep
 * seeing the name and the status they always saw.
 */

/** SOCKS5 replies (RFC 1928 section 6). */
export const SOCKS5_REPLY = {
  SUCCEEDED: 0x00,
  GENERAL_FAILURE: 0x01,
  NOT_ALLOWED: 0x02,
  NETWORK_UNREACHABLE: 0x03,
  HOST_UNREACHABLE: 0x04,
  CONNECTION_REFUSED: 0x05,
  TTL_EXPIRED: 0x06,
  COMMAND_NOT_SUPPORTED: 0x07,
  ADDRESS_TYPE_NOT_SUPPORTED: 0x08,
} as const;

export interface ErrorSpec {
  readonly status: number;
  readonly socks: number;
  readonly message: string;
  /** The code clients see, when it is not the registry's own name. */
  readonly wire?: string;
  /**
   * RFC 9209's error type for the `Proxy-Status` header of a door's own error answer; absent: a 4xx is
   * `http_request_error`, a 5xx `proxy_internal_error`.
   */
  readonly proxyStatus?: ProxyStatusError;
}

/** The RFC 9209 (section 2.3) error types Rota uses. */
export type ProxyStatusError =
  | 'destination_ip_prohibited'
  | 'destination_unavailable'
  | 'connection_limit_reached'
  | 'http_request_denied'
  | 'http_request_error'
  | 'http_response_timeout'
  | 'http_response_body_size'
  | 'tls_certificate_error'
  | 'proxy_internal_error'
  | 'proxy_configuration_error';

const { GENERAL_FAILURE: FAIL, NOT_ALLOWED, HOST_UNREACHABLE, TTL_EXPIRED } = SOCKS5_REPLY;

export const ERRORS = {
  // The request as sent.
  VALIDATION_ERROR: { status: 422, socks: FAIL, message: 'Request validation failed' },
  MALFORMED_REQUEST: {
    status: 400,
    socks: FAIL,
    message: 'The request is malformed',
    wire: 'VALIDATION_ERROR',
  },
  INVALID_URL: { status: 422, socks: FAIL, message: 'The target URL is not valid' },
  TARGET_FORBIDDEN: {
    status: 400,
    socks: NOT_ALLOWED,
    message: 'Target not allowed',
    wire: 'INVALID_URL',
    proxyStatus: 'destination_ip_prohibited',
  },
  INVALID_METHOD: { status: 422, socks: FAIL, message: 'Invalid method' },
  INVALID_TIMEOUT: { status: 422, socks: FAIL, message: 'Invalid timeout' },
  INVALID_PROXY_FORMAT: { status: 400, socks: FAIL, message: 'Invalid proxy URL' },
  INVALID_CONFIGURATION: { status: 400, socks: FAIL, message: 'Invalid configuration values' },
  INVALID_PROXY_PARAMS: { status: 400, socks: FAIL, message: 'Invalid proxy parameters' },
  BAD_REQUEST: { status: 400, socks: FAIL, message: 'The request is not valid HTTP/1.1' },
  HTTP_VERSION_NOT_SUPPORTED: {
    status: 505,
    socks: FAIL,
    message: 'HTTP version not supported; send HTTP/1.1',
  },
  CLIENT_TIMEOUT: { status: 408, socks: FAIL, message: 'The request did not arrive in time' },
  REQUEST_HEADERS_TOO_LARGE: { status: 431, socks: FAIL, message: 'Request headers are too large' },
  PAYLOAD_TOO_LARGE: { status: 413, socks: FAIL, message: 'Request body is too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, socks: FAIL, message: 'Unsupported Content-Type' },
  NOT_FOUND: { status: 404, socks: FAIL, message: 'Route not found' },
  METHOD_NOT_ALLOWED: { status: 405, socks: FAIL, message: 'Method not allowed here' },

  // Who may ask, and how often.
  UNAUTHORIZED: { status: 401, socks: FAIL, message: 'A valid API key is required' },
  PROXY_AUTH_REQUIRED: {
    status: 407,
    socks: FAIL,
    message: 'Proxy authentication required',
    proxyStatus: 'http_request_denied',
  },
  RATE_LIMIT_EXCEEDED: {
    status: 429,
    socks: FAIL,
    message: 'Rate limit exceeded',
    proxyStatus: 'http_request_denied',
  },
  HOST_RATE_LIMITED: {
    status: 429,
    socks: FAIL,
    message: "The target host's rate limit (a policy rule) leaves no start within the call's timeout",
    proxyStatus: 'http_request_denied',
  },
  TOO_MANY_CONNECTIONS: {
    status: 503,
    socks: FAIL,
    message: 'Too many connections',
    proxyStatus: 'connection_limit_reached',
  },
  MISDIRECTED_REQUEST: { status: 421, socks: FAIL, message: 'This host is not served here' },
  FORBIDDEN_ORIGIN: { status: 403, socks: NOT_ALLOWED, message: 'Requests from this origin are refused' },
  SSRF_BLOCKED: {
    status: 403,
    socks: NOT_ALLOWED,
    message: 'Target not allowed',
    proxyStatus: 'destination_ip_prohibited',
  },

  // The pool.
  PROXY_NOT_FOUND: { status: 404, socks: FAIL, message: 'Proxy not found' },
  PROXY_ALREADY_EXISTS: { status: 409, socks: FAIL, message: 'A proxy with this URL already exists' },
  PROXY_POOL_EMPTY: {
    status: 503,
    socks: FAIL,
    message: 'No proxy can serve the request',
    proxyStatus: 'destination_unavailable',
  },
  SESSION_NOT_FOUND: { status: 404, socks: FAIL, message: 'Session not found' },

  // A call through the proxies.
  PROXY_FAILOVER_EXHAUSTED: {
    status: 502,
    socks: HOST_UNREACHABLE,
    message: 'Every proxy tried failed',
    proxyStatus: 'destination_unavailable',
  },
  PROXY_ERROR: {
    status: 502,
    socks: FAIL,
    message: 'The proxy failed',
    proxyStatus: 'destination_unavailable',
  },
  TARGET_UNREACHABLE: {
    status: 504,
    socks: HOST_UNREACHABLE,
    message: 'The target could not be reached through the proxies',
    proxyStatus: 'destination_unavailable',
  },
  REQUEST_TIMEOUT: {
    status: 504,
    socks: TTL_EXPIRED,
    message: 'The request did not complete within its timeout',
    proxyStatus: 'http_response_timeout',
  },
  REQUEST_FAILED: {
    status: 502,
    socks: FAIL,
    message: 'The request failed',
    proxyStatus: 'destination_unavailable',
  },
  TARGET_CERT_INVALID: {
    status: 502,
    socks: FAIL,
    message: "The target's certificate is not valid",
    proxyStatus: 'tls_certificate_error',
  },

  // Proxy sources.
  SOURCE_FETCH_FAILED: { status: 502, socks: FAIL, message: 'The proxy source could not be fetched' },

  // Rota itself. A 5xx of Rota's own answers with the registry's message; the thrown one is logged.
  STORAGE_KEY_ERROR: { status: 500, socks: FAIL, message: 'The storage encryption key is not usable' },
  STORAGE_MIGRATION_ERROR: { status: 500, socks: FAIL, message: 'The storage schema could not be migrated' },
  CREDENTIAL_DECRYPT_ERROR: { status: 500, socks: FAIL, message: 'A stored credential could not be read' },
  SERVICE_UNAVAILABLE: { status: 503, socks: FAIL, message: 'Service unavailable; try again later' },
  STORAGE_UNAVAILABLE: { status: 503, socks: FAIL, message: 'Storage is unavailable; try again later' },
  CONFIGURATION_ERROR: { status: 500, socks: FAIL, message: 'Invalid configuration' },
  INTERNAL_ERROR: { status: 500, socks: FAIL, message: 'Internal server error' },
} as const satisfies Record<string, ErrorSpec>;

/** A code of the registry: a misspelt one does not compile. */
export type RotaErrorCode = keyof typeof ERRORS;

/** Every registered code's spec, read as the common shape. */
export function specOf(code: RotaErrorCode): ErrorSpec {
  return ERRORS[code];
}

/** RFC 9209's error type for `code` (the door's `Proxy-Status` header). */
export function proxyStatusOf(code: RotaErrorCode): ProxyStatusError {
  const spec = specOf(code);
  return spec.proxyStatus ?? (spec.status < 500 ? 'http_request_error' : 'proxy_internal_error');
}

/** The code clients see for `code`. */
export function wireCode(code: RotaErrorCode): string {
  return specOf(code).wire ?? code;
}
