import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { poolStatus } from '../../control/status.ts';
import { poolHealth, summarize } from '../../pool/summary.ts';
import { ErrorEnvelope, errorResponses, Nullable } from '../../schemas/common.ts';
import type { Services } from '../../services.ts';
import { VERSION } from '../../version.ts';

const TAG = ['monitoring'];

const HealthSchema = Type.Object({
  status: Type.Enum(['healthy', 'degraded', 'unhealthy']),
  uptime_seconds: Type.Number(),
  version: Type.String(),
  timestamp: Type.String({ format: 'date-time' }),
});

const ReadySchema = Type.Object({
  ready: Type.Boolean(),
  checks: Type.Object({ proxy_pool_initialized: Type.Boolean(), storage_connected: Type.Boolean() }),
});

const StatusSchema = Type.Object({
  pool_stats: Type.Object({
    total: Type.Integer(),
    active: Type.Integer(),
    failed: Type.Integer(),
    healthy_percentage: Type.Number({
      description: 'Of the proxies whose health is known (`checked`): the healthy ones; 0 when none is',
    }),
    checked: Type.Integer({ description: 'Proxies health-checked or used; the others were never tried' }),
    last_rotation: Nullable(Type.String({ format: 'date-time' })),
  }),
  rotation_strategy: Type.String(),
  storage_backend: Type.String(),
  config_source: Type.String(),
});

const Totals = Type.Object({
  requests: Type.Integer({ description: 'Requests (absolute-URI) or tunnels answered' }),
  succeeded: Type.Integer(),
  refused: Type.Integer({ description: 'Answered with an error (X-Rota-Error / a SOCKS5 failure reply)' }),
  bytesUp: Type.Integer({ description: 'Bytes relayed towards targets' }),
  bytesDown: Type.Integer({ description: 'Bytes relayed back to clients' }),
  openTunnels: Type.Integer(),
});

const ListenersSchema = Type.Object({
  listeners: Type.Array(
    Type.Object({
      name: Type.Enum(['http', 'socks5']),
      enabled: Type.Boolean({ description: 'False when its port is 0' }),
      address: Nullable(Type.String()),
      port: Nullable(Type.Integer()),
      open_tunnels: Type.Integer(),
      totals: Type.Record(Type.String(), Totals, {
        description:
          'Per path: http (absolute-URI), connect and inspect (requests inside inspected HTTPS connections) ' +
          'for the HTTP listener, socks5 for SOCKS5',
      }),
    }),
  ),
  inspection: Type.Object(
    {
      hosts: Type.Array(Type.String(), { description: 'Host patterns inspected (PUT /api/v1/inspection)' }),
      passthrough: Type.Array(Type.String(), { description: 'Host patterns never inspected' }),
      ca_origin: Nullable(
        Type.Enum(['operator', 'store', 'memory'], { description: 'null until first needed' }),
      ),
      cached_contexts: Type.Integer({ description: 'Leaf certificates kept (ROTA_INSPECT_CACHE at most)' }),
      handshakes: Type.Object({
        ok: Type.Integer(),
        client_refused: Type.Integer({ description: "The client did not trust Rota's CA" }),
        not_tls: Type.Integer({ description: 'Not TLS after the CONNECT: sent on through a plain tunnel' }),
        leaf_budget: Type.Integer({
          description: 'Closed: the client had used ROTA_INSPECT_NEW_HOSTS_PER_MINUTE new hosts this minute',
        }),
      }),
    },
    { description: 'HTTPS inspection: its settings and what it did' },
  ),
});

export function monitoringRoutes(services: Services, lastRotation: () => number | null): FastifyPluginAsync {
  return async (app) => {
    app.get(
      '/health',
      {
        // Probes of load balancers and orchestrators must never be throttled into "unhealthy".
        config: { rateLimit: false },
        schema: {
          tags: TAG,
          summary: 'Liveness and pool health (503 when every proxy is failing)',
          response: { 200: HealthSchema, 503: HealthSchema, 500: ErrorEnvelope },
        },
      },
      async (_req, reply) => {
        const status = poolHealth(summarize(services.pool));
        reply.code(status === 'unhealthy' ? 503 : 200);
        return {
          status,
          uptime_seconds: Math.round((services.clock.now() - services.startedAt) / 10) / 100,
          version: VERSION,
          timestamp: new Date(services.clock.now()).toISOString(),
        };
      },
    );

    app.get(
      '/ready',
      {
        // Probes of load balancers and orchestrators must never be throttled into "unhealthy".
        config: { rateLimit: false },
        schema: {
          tags: TAG,
          summary: 'Readiness: storage open and pool loaded',
          response: { 200: ReadySchema, 503: ReadySchema },
        },
      },
      async (_req, reply) => {
        const checks = {
          proxy_pool_initialized: services.ready,
          storage_connected: services.store.connected,
        };
        const ready = checks.proxy_pool_initialized && checks.storage_connected;
        reply.code(ready ? 200 : 503);
        return { ready, checks };
      },
    );

    app.get(
      '/listeners',
      {
        schema: {
          tags: TAG,
          summary: 'The forward-proxy listeners: address, open tunnels and totals',
          response: { 200: ListenersSchema, ...errorResponses() },
        },
      },
      async () => {
        const { hosts, passthrough } = services.inspectionSettings.get();
        const inspection = {
          hosts,
          passthrough,
          ca_origin: services.inspection.authority.origin,
          cached_contexts: services.inspection.leaves.size,
          handshakes: services.listeners.metrics.handshakes,
        };
        return { listeners: services.listeners.info(), inspection };
      },
    );

    app.get(
      '/status',
      {
        schema: { tags: TAG, summary: 'Pool status', response: { 200: StatusSchema, ...errorResponses() } },
      },
      async () =>
        poolStatus({
          pool: services.pool,
          settings: services.settings,
          backend: services.store.backend,
          lastRotation: lastRotation(),
        }),
    );
  };
}
