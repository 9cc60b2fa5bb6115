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
  { $id: 'ErrorEnvelope', description: 'Error envelope (spec section 7)' },
);

export function Envelope<T extends TSchema>(data: T, description = 'Success') {
  return Type.Object(
    { status: Type.Enum(['success']), data, error: Type.Null(), meta: Meta },
    { description },
  );
}

/** Response schemas for the error statuses a route can answer with. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorEnvelope> {
  const out: Record<number, typeof ErrorEnvelope> = {};
  for (const s of [...new Set([...statuses, 401, 429, 500])]) out[s] = ErrorEnvelope;
  return out;
}

/** The same for a route served without a key: no 401, so the document marks it public too. */
export function publicErrorResponses(...statuses: number[]): Record<number, typeof ErrorEnvelope> {
  const out = errorResponses(...statuses);
  delete out[401];
  return out;
}

export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
