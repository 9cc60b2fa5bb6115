import { type Static, Type } from 'typebox';
import {
  HEALTH_VALUES,
  MAX_PROXY_URL_LENGTH,
  PROTOCOLS,
  STATUS_FILTERS,
  STATUS_VALUES,
} from '../pool/types.ts';
import { checkedByHandler, Nullable } from './common.ts';
import { PROXY_URL_PATTERN, PROXY_URL_WITHOUT_CREDENTIALS_PATTERN } from './patterns.ts';

export const ProxyStatsSchema = Type.Object({
  total_requests: Type.Integer(),
  successful_requests: Type.Integer(),
  failed_requests: Type.Integer(),
  avg_latency_ms: Type.Number(),
});

export const ProxySchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    url: Type.String({ description: 'scheme://host:port; credentials are never shown' }),
    protocol: Type.Enum([...PROTOCOLS]),
    status: Type.Enum([...STATUS_VALUES]),
    health: Type.Enum([...HEALTH_VALUES]),
    weight: Type.Number(),
    country: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    has_credentials: Type.Boolean(),
    kind: Type.Enum(['static', 'gateway'], {
      description: 'gateway: a provider endpoint with a username_template (its exit changes by design)',
    }),
    label: Nullable(Type.String({ description: "The operator's label (POST, PATCH, import)" })),
    display_label: Nullable(
      Type.String({
        description:
          'What lists show: `label`, else the non-secret part of the username or its template (the words ' +
          'before a session-, password- or id-looking one); never a password (docs/decisions.md)',
      }),
    ),
    exit_ip: Nullable(Type.String({ description: 'The exit address last seen (ROTA_EXIT_IP_URL)' })),
    exit_ip_seen_at: Nullable(Type.String({ format: 'date-time' })),
    exit_country: Nullable(Type.String({ description: 'From ROTA_GEOIP_DB; ISO 3166-1 alpha-2' })),
    exit_asn: Nullable(Type.Integer({ description: 'From ROTA_GEOIP_DB, when it holds ASNs' })),
    exit_shared_with: Type.Integer({
      minimum: 0,
      description: 'Other members last seen exiting from the same address (a ban on one applies to all)',
    }),
    stats: ProxyStatsSchema,
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'Proxy' },
);

/** Fields of an exported line that an import ignores: the server sets them. */
export const READ_ONLY_FIELDS = [
  'id',
  'protocol',
  'status',
  'health',
  'has_credentials',
  'kind',
  'display_label',
  'exit_ip',
  'exit_ip_seen_at',
  'exit_country',
  'exit_asn',
  'exit_shared_with',
  'stats',
  'created_at',
  'updated_at',
] as const;

const TEMPLATE_DESCRIPTION =
  "A provider gateway's username (password) with the placeholders {session}, {country} and {rand}, " +
  'rendered per attempt; a credential: never shown';
const Template = () => Type.String({ minLength: 1, maxLength: 256, description: TEMPLATE_DESCRIPTION });
const Label = () =>
  Type.String({ minLength: 1, maxLength: 64, description: 'A name for the entry, shown in every list' });

export const AddProxyBody = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: MAX_PROXY_URL_LENGTH,
      ...checkedByHandler(PROXY_URL_PATTERN),
      description:
        '`scheme://[user[:password]@]host:port[/]`, e.g. http://host:3128 or socks5://user:pass@host:1080. ' +
        'Scheme http, https, socks4, socks4a, socks5 or socks5h (any case); user and password ' +
        'percent-encoded where needed (valid UTF-8 escapes only); host a name (labels of 1-63 letters, digits ' +
        'and inner hyphens, at most 253 characters), a dotted IPv4 address or a bracketed IPv6 address; port ' +
        '1-65535; no path, query or fragment; surrounding white space is ignored. At most 2048 UTF-16 code ' +
        'units. Anything else is 400 INVALID_PROXY_FORMAT with the reason.',
    }),
    // As long as credentials a `url` may hold: what export writes as fields, import takes back.
    username: Type.Optional(Type.String({ maxLength: 2048 })),
    password: Type.Optional(Type.String({ maxLength: 2048, format: 'password' })),
    weight: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000, default: 1 })),
    country: Type.Optional(Type.String({ pattern: '^[A-Za-z]{2}$', description: 'ISO 3166-1 alpha-2' })),
    tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 32 })),
    label: Type.Optional(Label()),
    username_template: Type.Optional(Template()),
    password_template: Type.Optional(Template()),
  },
  {
    additionalProperties: false,
    // Credentials come either in the URL or as fields, never both (400 INVALID_PROXY_FORMAT).
    if: { anyOf: [{ required: ['username'] }, { required: ['password'] }] },
    // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword, not a thenable
    then: { properties: { url: checkedByHandler(PROXY_URL_WITHOUT_CREDENTIALS_PATTERN) } },
    description: 'Credentials go either in `url` or in `username`/`password`, not in both.',
  },
);
export type AddProxyBodyT = Static<typeof AddProxyBody>;

export const PatchProxyBody = Type.Object(
  {
    weight: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 })),
    country: Type.Optional(
      Nullable(Type.String({ pattern: '^[A-Za-z]{2}$', description: 'ISO 3166-1 alpha-2; null clears it' })),
    ),
    tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 32 })),
    label: Type.Optional(Nullable(Label())),
    username: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 2048 }))),
    password: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 2048, format: 'password' }))),
    username_template: Type.Optional(Nullable(Template())),
    password_template: Type.Optional(Nullable(Template())),
  },
  {
    additionalProperties: false,
    description: 'Only the fields given change; null clears one. The address cannot change (add another).',
  },
);
export type PatchProxyBodyT = Static<typeof PatchProxyBody>;

export const ListQuery = Type.Object({
  page: Type.Integer({ minimum: 1, maximum: 10_000_000, default: 1 }),
  page_size: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
  status_filter: Type.Optional(Type.Enum([...STATUS_FILTERS])),
});
export type ListQueryT = Static<typeof ListQuery>;

export const ExportQuery = Type.Object({
  status_filter: Type.Optional(Type.Enum([...STATUS_FILTERS])),
  credentials: Type.Boolean({
    default: false,
    description:
      'true: each line also holds username, password and the templates, so that POST proxies/import ' +
      'restores the pool; audit-logged (proxy.export_credentials)',
  }),
});

export const ProxyPage = Type.Object({
  items: Type.Array(ProxySchema),
  total: Type.Integer(),
  page: Type.Integer(),
  page_size: Type.Integer(),
  has_next: Type.Boolean(),
  has_prev: Type.Boolean(),
});

export const ProxyIdParams = Type.Object({ proxy_id: Type.String({ maxLength: 64 }) });
