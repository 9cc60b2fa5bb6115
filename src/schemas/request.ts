import { type Static, Type } from 'typebox';
import { checkedByHandler, type DescribedStatus, Nullable } from './common.ts';
import { BASE64_PATTERN, HEADER_NAME_PATTERN, HEADER_VALUE_PATTERN, TARGET_URL_PATTERN } from './patterns.ts';

/** The 400 of `POST request`: a target the SSRF rules refuse (docs/decisions.md, "Errors"). */
export const TARGET_REFUSED: DescribedStatus = {
  status: 400,
  description:
    'INVALID_URL: the target is not allowed; `details.reason` is scheme, credentials, loopback, private, ' +
    'link_local, reserved, multicast, broadcast, unspecified, internal_domain or unresolvable',
};

export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;

/** Headers for the target: RFC 9110 token names and field values (patterns.ts). */
const TargetHeaders = Type.Unsafe<Record<string, string>>({
  type: 'object',
  propertyNames: { pattern: HEADER_NAME_PATTERN },
  additionalProperties: Type.String({ maxLength: 8192, pattern: HEADER_VALUE_PATTERN }),
  maxProperties: 100,
  default: {},
  description: 'Sent to the target, except hop-by-hop headers, Host, Content-Length and Expect',
});

export const ProxiedRequestBody = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 8192,
      ...checkedByHandler(TARGET_URL_PATTERN),
      examples: ['https://example.com/'],
      description:
        'Target URL: http or https, no user-info (send credentials in `headers`), host a name (ASCII ' +
        'letters, digits, `_` and `-`, the last label starting with a letter; an IDN as punycode), a dotted ' +
        'IPv4 address or a bracketed IPv6 address, optional port 0-65535, then any path, query and fragment ' +
        '(percent-encoded on the way out where needed). Every such URL parses; the server also takes other ' +
        'spellings the WHATWG URL parser reads the same way. One that does not parse is 422 INVALID_URL. ' +
        'Another scheme, credentials, or a host the SSRF rules refuse (a loopback, private, link-local or ' +
        'reserved address, an internal or single-label name, a name that does not resolve) is 400 ' +
        'INVALID_URL with `details.reason`.',
    }),
    method: Type.Enum([...METHODS], { default: 'GET' }),
    headers: TargetHeaders,
    body: Type.Optional(
      Nullable(
        Type.String({
          description:
            'Request body for the target; null or absent for none. With `body_encoding: base64`, base64',
        }),
      ),
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
  {
    additionalProperties: false,
    // A base64 body must be standard base64 with its padding (422 VALIDATION_ERROR otherwise).
    if: { properties: { body_encoding: { const: 'base64' } }, required: ['body_encoding'] },
    // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword, not a thenable
    then: { properties: { body: { pattern: BASE64_PATTERN } } },
  },
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
  session_id: Type.Optional(Type.String({ description: 'The session the call used (`session_id` asked)' })),
  policy: Type.Optional(Type.String({ description: 'The policy rule that applied to the call, if any' })),
});

export const RotateQuery = Type.Object({
  session_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  country: Type.Optional(Type.String({ pattern: '^[A-Za-z]{2}$' })),
  host: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9._:-]{1,253}$',
      description:
        'Pick as for a request to this host: proxies cooling down for it (bans) are passed over, and the ' +
        'policy rule that applies (`policy` in the answer) chooses among the proxies it allows',
    }),
  ),
  path: Type.Optional(
    Type.String({ pattern: '^/', maxLength: 2048, description: 'The path, for rules that match on paths' }),
  ),
  method: Type.Optional(
    Type.String({ pattern: '^[A-Z]{1,16}$', description: 'The method, for rules that match on methods' }),
  ),
});
