import { type Static, Type } from 'typebox';
import { BanReportBody, BansQuery } from '../schemas/bans.ts';
import { HealthCheckBody } from '../schemas/health-check.ts';
import { AddProxyBody, ListQuery, ProxyIdParams } from '../schemas/proxy.ts';
import { ProxiedRequestBody, RotateQuery } from '../schemas/request.ts';

/**
 * The tools' input schemas, made of the REST API's own property schemas (src/schemas/), so that a tool
 * takes exactly what the matching route takes: the same patterns, ranges and defaults.
 */

const R = ProxiedRequestBody.properties;

/** Body bytes the fetch tool shows by default, and at most (the engine's own cap still applies first). */
export const DEFAULT_MAX_BYTES = 100_000;
export const MAX_MAX_BYTES = 10_485_760;

export const FetchArgs = Type.Object(
  {
    url: R.url,
    method: R.method,
    headers: R.headers,
    body: Type.Optional(
      Type.Union([Type.String({ description: 'Request body for the target, as text' }), Type.Null()]),
    ),
    session: R.session_id,
    country: R.country,
    timeout: R.timeout,
    max_bytes: Type.Integer({
      minimum: 1,
      maximum: MAX_MAX_BYTES,
      default: DEFAULT_MAX_BYTES,
      description: 'Body bytes to show at most; a longer body is cut there and marked truncated',
    }),
  },
  { additionalProperties: false },
);
export type FetchArgsT = Static<typeof FetchArgs>;

export const ListProxiesArgs = Type.Object({ ...ListQuery.properties }, { additionalProperties: false });
export type ListProxiesArgsT = Static<typeof ListProxiesArgs>;

export const RotateArgs = Type.Object({ ...RotateQuery.properties }, { additionalProperties: false });
export type RotateArgsT = Static<typeof RotateArgs>;

export const CheckProxiesArgs = HealthCheckBody;

/** The bans tool: `list` takes GET bans' query, `report` POST bans' body. */
export const BansArgs = Type.Object(
  {
    action: Type.Enum(['list', 'report'], { default: 'list' }),
    ...BansQuery.properties,
    proxy_id: Type.Optional(BanReportBody.properties.proxy_id),
    cooldown_s: BanReportBody.properties.cooldown_s,
    session_id: BanReportBody.properties.session_id,
  },
  { additionalProperties: false },
);
export type BansArgsT = Static<typeof BansArgs>;

export const AddProxyArgs = AddProxyBody;

export const RemoveProxyArgs = Type.Object(
  { proxy_id: ProxyIdParams.properties.proxy_id },
  { additionalProperties: false },
);

export const NoArgs = Type.Object({}, { additionalProperties: false });
