/**
 * Per-site policies (`GET/PUT /api/v1/policies`): an ordered list of rules, the first whose `match` fits
 * a call applies, and the global settings fill what it leaves out. One schema is the API's validator, its
 * TypeScript type and its OpenAPI document; what a schema cannot say (host patterns, unique names, the
 * rate syntax's bounds) is checked by problems.ts and reported beside it.
 *
 * Patterns are globs of inspect/patterns.ts (`example.com`, `*.example.com`, `*`, an IP literal) and path
 * prefixes: never a user's regular expression, so no rule can make matching slow.
 */
import { type Static, Type } from 'typebox';
import { STRATEGIES } from '../rotation/names.ts';
import { checkedByHandler } from '../schemas/common.ts';
import { HOST_PATTERN_PATTERN, NOT_BLANK_PATTERN } from '../schemas/patterns.ts';

/** Rules one list holds at most (per-rule metric series are bounded by it). */
export const MAX_RULES = 200;

const StrategySchema = Type.Union(
  STRATEGIES.map((s) => Type.Literal(s)),
  { description: 'The rotation strategy for calls this rule matches' },
);

const Tag = Type.String({ minLength: 1, maxLength: 64 });
const Country = Type.String({ pattern: '^[A-Za-z]{2}$', description: 'ISO 3166-1 alpha-2' });

export const MatchSchema = Type.Object(
  {
    hosts: Type.Array(
      Type.String({ minLength: 1, maxLength: 253, ...checkedByHandler(HOST_PATTERN_PATTERN) }),
      {
        minItems: 1,
        maxItems: 100,
        description: 'Host patterns: `example.com`, `*.example.com` (subdomains), `*`, an IP literal',
      },
    ),
    paths: Type.Optional(
      Type.Array(Type.String({ pattern: '^/', minLength: 1, maxLength: 1024 }), {
        minItems: 1,
        maxItems: 100,
        description:
          'Path prefixes (`/search` matches `/search` and `/search/x`, not `/searching`). A rule with ' +
          'paths only matches calls whose path Rota sees (the API, absolute-URI, inspected HTTPS).',
      }),
    ),
    methods: Type.Optional(
      Type.Array(Type.String({ pattern: '^[A-Z]{1,16}$' }), {
        minItems: 1,
        maxItems: 16,
        uniqueItems: true,
        description:
          'Upper-case methods; a tunnel (CONNECT, SOCKS5) has none and never matches a method list',
      }),
    ),
  },
  { additionalProperties: false },
);

export const SessionTermsSchema = Type.Object(
  {
    idle_ttl_s: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 86_400, description: 'Forgotten after this long unused' }),
    ),
    max_ttl_s: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 86_400,
        description: 'Pinned anew after this long, however busy; 0: never',
      }),
    ),
    max_requests: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 10_000_000,
        description: 'Pinned anew after this many requests; 0: never',
      }),
    ),
    scope: Type.Optional(
      Type.Union([Type.Literal('all'), Type.Literal('host')], {
        description: '`host`: one pin per target host, so a ban on one site re-pins only that site',
      }),
    ),
    on_ban: Type.Optional(
      Type.Union([Type.Literal('rotate'), Type.Literal('keep')], {
        description: '`keep`: a ban leaves the pin in place and the banned answer is returned',
      }),
    ),
  },
  { additionalProperties: false },
);

export const RuleSchema = Type.Object(
  {
    name: Type.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$',
      description: 'Unique; shown in X-Rota-Policy and as the `rule` label of per-rule metrics',
    }),
    match: MatchSchema,
    proxies: Type.Optional(
      Type.Object(
        {
          tags_any: Type.Optional(
            Type.Array(Tag, { maxItems: 50, description: 'Only proxies with one of these tags' }),
          ),
          tags_none: Type.Optional(
            Type.Array(Tag, { maxItems: 50, description: 'Never proxies with any of these' }),
          ),
          countries: Type.Optional(
            Type.Array(Country, { maxItems: 250, description: 'Only proxies of these countries' }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    strategy: Type.Optional(StrategySchema),
    ban: Type.Optional(
      Type.Object(
        {
          status_codes: Type.Optional(
            Type.Array(Type.Integer({ minimum: 400, maximum: 599 }), { maxItems: 200, uniqueItems: true }),
          ),
          body_patterns: Type.Optional(
            Type.Array(
              Type.String({ minLength: 1, maxLength: 200, ...checkedByHandler(NOT_BLANK_PATTERN) }),
              {
                maxItems: 20,
                description: 'Case-insensitive substrings of the first 64 KiB of a body',
              },
            ),
          ),
          cooldown_s: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400 })),
        },
        { additionalProperties: false },
      ),
    ),
    retry: Type.Optional(
      Type.Object(
        {
          max_attempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
          retry_non_idempotent: Type.Optional(Type.Boolean()),
        },
        { additionalProperties: false },
      ),
    ),
    max_in_flight_per_proxy: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100_000,
        description: 'Calls of this rule in flight through one proxy',
      }),
    ),
    min_interval_ms: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 3_600_000,
        description: 'Least time between two request starts through one proxy to one host (politeness)',
      }),
    ),
    host_rate_limit: Type.Optional(
      Type.String({
        pattern: '^[1-9][0-9]{0,5}/(second|minute)$',
        description:
          'Requests to one host across the pool, spaced evenly (`60/minute`: one a second); a call waits ' +
          'within its deadline, else 429 HOST_RATE_LIMITED',
      }),
    ),
    session: Type.Optional(SessionTermsSchema),
    inspect: Type.Optional(
      Type.Boolean({ description: 'Inspect tunnels to matching hosts (unless the client asks otherwise)' }),
    ),
  },
  { additionalProperties: false },
);
export type RuleInput = Static<typeof RuleSchema>;

export const PolicyListSchema = Type.Object(
  {
    rules: Type.Array(RuleSchema, { maxItems: MAX_RULES, description: 'In order: the first match applies' }),
  },
  { additionalProperties: false },
);
export type PolicyList = Static<typeof PolicyListSchema>;
