import { type Static, Type } from 'typebox';
import { Nullable } from './common.ts';

export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;

export const ProxiedRequestBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 8192, description: 'Target URL (http or https)' }),
    method: Type.Enum([...METHODS], { default: 'GET' }),
    headers: Type.Record(Type.String(), Type.String({ maxLength: 8192 }), {
      maxProperties: 100,
      default: {},
    }),
    body: Type.Optional(
      Nullable(Type.String({ description: 'Request body for the target; null or absent for none' })),
    ),
    body_encoding: Type.Optional(
      Type.Enum(['utf8', 'base64'], { description: 'How `body` is encoded; default utf8' }),
    ),
    timeout: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 300, description: 'Total deadline in seconds, retries included' }),
    ),
    session_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 256, description: 'Sticky key (session-persistence)' }),
    ),
    country: Type.Optional(
      Type.String({ pattern: '^[A-Za-z]{2}$', description: 'ISO 3166-1 alpha-2 (geo-targeted)' }),
    ),
  },
  { additionalProperties: false },
);
export type ProxiedRequestBodyT = Static<typeof ProxiedRequestBody>;

export const ProxiedResponse = Type.Object({
  status_code: Type.Integer(),
  headers: Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())])),
  body: Type.String(),
  body_encoding: Type.Enum(['utf8', 'base64']),
  proxy_used: Type.String({ description: 'scheme://host:port of the proxy that answered' }),
  proxy_id: Type.String(),
  attempts: Type.Integer(),
  elapsed_ms: Type.Number(),
});

export const RotateQuery = Type.Object({
  session_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  country: Type.Optional(Type.String({ pattern: '^[A-Za-z]{2}$' })),
  host: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9._:-]{1,253}$',
      description: 'Pick as for a request to this host: proxies cooling down for it (bans) are passed over',
    }),
  ),
});
