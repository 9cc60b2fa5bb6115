import type { FastifyPluginAsync } from 'fastify';
import { type Static, Type } from 'typebox';
import { Envelope, errorResponses, Nullable } from '../../schemas/common.ts';
import { HealthCheckBody as Body } from '../../schemas/health-check.ts';
import type { Services } from '../../services.ts';
import { ok } from '../envelope.ts';
import { routeLimit } from '../rate-limit.ts';

const Result = Type.Object({
  proxy_id: Type.String(),
  status: Type.Enum(['working', 'failed']),
  latency_ms: Type.Number(),
  error: Nullable(Type.String()),
  tested_at: Type.String({ format: 'date-time' }),
});

export function healthCheckRoutes(services: Services): FastifyPluginAsync {
  const checker = services.health;
  return async (app) => {
    for (const path of ['/proxies/health-check', '/proxies/test']) {
      const deprecated = path.endsWith('test');
      app.post<{ Body: Static<typeof Body> | undefined }>(
        path,
        {
          // No body at all means "check every proxy", like an empty object. A JSON `null` is a body, and
          // not an object: the schema refuses it (422).
          preValidation: (req, _reply, done) => {
            if (req.body === undefined) req.body = {};
            done();
          },
          config: {
            audit: deprecated ? 'proxy.test' : 'proxy.health_check',
            rateLimit: routeLimit('healthCheck', services.config, services.settings),
          },
          schema: {
            tags: ['proxies'],
            summary: deprecated
              ? 'Health-check proxies (deprecated: use proxies/health-check)'
              : 'Health-check proxies',
            deprecated,
            'x-body-optional': true,
            body: Body,
            response: { 200: Envelope(Type.Array(Result)), ...errorResponses(413, 415, 422) },
          },
        },
        async (req, reply) => {
          if (deprecated)
            reply
              .header('deprecation', 'true')
              .header('link', '</api/v1/proxies/health-check>; rel="successor-version"');
          return ok(req, await checker.check(req.body?.proxy_ids));
        },
      );
    }
  };
}
