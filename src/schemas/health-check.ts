import { type Static, Type } from 'typebox';

/** Proxy ids one health check takes at most. */
export const MAX_PROXY_IDS = 1000;

/** `POST proxies/health-check` (and the MCP tool check_proxies). */
export const HealthCheckBody = Type.Object(
  {
    proxy_ids: Type.Optional(
      Type.Array(Type.String({ maxLength: 64 }), {
        maxItems: MAX_PROXY_IDS,
        description: 'Omit to check every proxy',
      }),
    ),
  },
  { additionalProperties: false },
);
export type HealthCheckBodyT = Static<typeof HealthCheckBody>;
