/** Per-site analytics (`GET /api/v1/hosts`, `GET /api/v1/hosts/{host}`); free of Node's modules (web/ reads it). */
import { type Static, Type } from 'typebox';
import { Nullable } from './common.ts';

const Figures = (what: string) =>
  Type.Object({
    requests: Type.Integer({ description: what }),
    successes: Type.Integer(),
    bans: Type.Integer({ description: 'Answers that were bans: counted apart, never as failures' }),
    failures: Type.Integer(),
    success_rate: Nullable(Type.Number({ minimum: 0, maximum: 1 })),
    p50_ms: Nullable(Type.Number()),
    p95_ms: Nullable(Type.Number()),
    bytes: Type.Number({ description: 'Both ways' }),
  });

const HostFigures = Figures('Calls to the host');
const ProxyFigures = Figures('Attempts through the proxy to the host');

export const HostRowSchema = Type.Object({
  host: Type.String(),
  last_15m: HostFigures,
  last_1h: HostFigures,
  cooling_down: Type.Integer({ description: 'Proxies cooling down for this host now (banned by it)' }),
  count_error: Type.Integer({
    description: "How many of the hour's calls may belong to hosts tracked before this one (Space-Saving)",
  }),
});
export type HostRowT = Static<typeof HostRowSchema>;

const NOTE =
  'This instance only. `successes` are calls that got a non-ban answer, `failures` calls that failed; ' +
  "a proxy's `failures` are its own faults (proxy errors, timeouts) and its success rate leaves bans out.";

export const HostsPageSchema = Type.Object({
  items: Type.Array(HostRowSchema, { description: 'Busiest first (calls in the last hour)' }),
  tracked: Type.Integer({ description: 'Hosts held by the sketch' }),
  max_tracked: Type.Integer(),
  scope: Type.Literal('instance', { description: NOTE }),
});
export type HostsPageT = Static<typeof HostsPageSchema>;

export const HostProxyRowSchema = Type.Object({
  proxy_id: Type.String(),
  proxy_label: Nullable(Type.String({ description: 'host:port (no credential); null once deleted' })),
  last_15m: ProxyFigures,
  last_1h: ProxyFigures,
  cooling_until: Nullable(Type.Integer({ description: 'Epoch ms: the end of its ban by this host, if any' })),
});

export const HostDetailSchema = Type.Object({
  ...HostRowSchema.properties,
  proxies: Type.Array(HostProxyRowSchema, { description: 'Busiest first (the 16 busiest for this host)' }),
  scope: Type.Literal('instance', { description: NOTE }),
});
export type HostDetailT = Static<typeof HostDetailSchema>;

export const HostsQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
});

export const HostParams = Type.Object({
  host: Type.String({
    minLength: 1,
    maxLength: 200,
    description:
      'The target host, as in the request log (the router takes path parameters of 200 characters at most)',
  }),
});
