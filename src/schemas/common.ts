import { type TSchema, Type } from 'typebox';

export const Meta = Type.Object(
  {
    request_id: Type.String(),
    timestamp: Type.String({ format: 'date-time' }),
    version: Type.String(),
  },
  { $id: 'Meta' },
);

export const DetailItem = Type.Object({
  loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
  msg: Type.String(),
  type: Type.String(),
  input: Type.Unknown(),
  ctx: Type.Object({}, { additionalProperties: true }),
});

export const ErrorEnvelope = Type.Object(
  {
    status: Type.Enum(['error']),
    data: Type.Null(),
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      details: Type.Unknown(),
      timestamp: Type.String({ format: 'date-time' }),
    }),
    meta: Meta,
    detail: Type.Optional(Type.Array(DetailItem)),
  },
  {
    $id: 'ErrorEnvelope',
    description:
      'Error envelope: `error.code` and `error.message`, the request id in `meta`; `detail` on a 422',
  },
);

export function Envelope<T extends TSchema>(data: T, description = 'Success') {
  return Type.Object(
    { status: Type.Enum(['success']), data, error: Type.Null(), meta: Meta },
    { description },
  );
}

/** An error status with what it means for this operation (the document's response description). */
export interface DescribedStatus {
  readonly status: number;
  readonly description: string;
}

/** An error response: the envelope, with the description of its status when one is given. */
export type ErrorResponse =
  | typeof ErrorEnvelope
  | { description: string; content: { 'application/json': { schema: typeof ErrorEnvelope } } };

/** 503 of a write while the shared store (PostgreSQL) is unreachable (error-handler.ts). */
export const STORAGE_UNAVAILABLE: DescribedStatus = {
  status: 503,
  description: 'STORAGE_UNAVAILABLE: the store (PostgreSQL) is unreachable; nothing was written, try again',
};

/** 503 of a selection with no proxy to pick (docs/decisions.md, "Requests, failover and retries"). */
export const POOL_EMPTY: DescribedStatus = {
  status: 503,
  description:
    'PROXY_POOL_EMPTY: no proxy can be picked (an empty pool, or every breaker open: then Retry-After says ' +
    'when the first one half-opens)',
};

/**
 * Response schemas for the error statuses a route can answer with, plus 401 (a key is required when
 * ROTA_REQUIRE_AUTH is on; docs.ts drops it otherwise), 429 (rate limits) and 500.
 */
export function errorResponses(...statuses: (number | DescribedStatus)[]): Record<number, ErrorResponse> {
  const out: Record<number, ErrorResponse> = {};
  for (const s of [...statuses, 401, 429, 500]) {
    if (typeof s === 'number') out[s] ??= ErrorEnvelope;
    else
      out[s.status] = {
        description: s.description,
        content: { 'application/json': { schema: ErrorEnvelope } },
      };
  }
  return out;
}

/** The same for a route served without a key: no 401, so the document marks it public too. */
export function publicErrorResponses(
  ...statuses: (number | DescribedStatus)[]
): Record<number, ErrorResponse> {
  const out = errorResponses(...statuses);
  delete out[401];
  return out;
}

/**
 * Schema keyword for a `pattern` that the document states but a handler checks, not the schema validator,
 * because the handler's refusal is Rota's answer (docs/decisions.md, "Errors"): a target URL with another
 * scheme or with credentials is an SSRF refusal (400 INVALID_URL with `details.reason`), not the 422 of a
 * schema failure; a proxy URL, a CORS origin or a blank ban pattern is refused with the parser's own reason,
 * once. docs.ts writes it as `pattern` into the document; test/openapi-constraints.test.ts holds each one
 * against the code that decides. Everything else the document states, the validator enforces.
 */
export const HANDLER_PATTERN = 'x-handler-pattern';

/** Options stating `pattern` in the document for a string its handler checks (see HANDLER_PATTERN). */
export function checkedByHandler(pattern: string): { [HANDLER_PATTERN]: string } {
  return { [HANDLER_PATTERN]: pattern };
}

export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
