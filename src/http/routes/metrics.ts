import type { FastifyPluginAsync } from 'fastify';
import { type TSchema, Type } from 'typebox';
import {
  EXPOSITION_CONTENT_TYPE,
  renderBreakerMetrics,
  renderRetryMetrics,
} from '../../metrics/exposition.ts';
import { Envelope, errorResponses, publicErrorResponses } from '../../schemas/common.ts';
import {
  BreakerMetricsSchema,
  FormatHoursQuery,
  HoursQuery,
  RetryHourSchema,
  RetryMetricsSchema,
  RetryProxySchema,
  RetrySummarySchema,
  StatsSchema,
} from '../../schemas/metrics.ts';
import type { Services } from '../../services.ts';
import { ok } from '../envelope.ts';
import { breakerView, eventView } from './breakers.ts';

const TAG = ['metrics'];

/** JSON by default, Prometheus exposition text with `format=prometheus`: both documented. */
function jsonOrText(json: TSchema) {
  return {
    description: 'JSON envelope, or Prometheus text (version 0.0.4) with format=prometheus',
    content: { 'application/json': { schema: json }, 'text/plain': { schema: Type.String() } },
  };
}

/** Routes under /api/v1: stats and the retry metrics in JSON. */
export function apiMetricsRoutes(services: Services): FastifyPluginAsync {
  const { retryMetrics } = services;
  return async (app) => {
    app.get(
      '/stats',
      {
        schema: {
          tags: TAG,
          summary: 'Request statistics',
          response: { 200: Envelope(StatsSchema), ...errorResponses() },
        },
      },
      async (req) => ok(req, services.shared.statsView(services.stats.snapshot(), services.pool)),
    );

    app.get(
      '/metrics/retries',
      {
        schema: {
          tags: TAG,
          summary: 'Retry metrics summary',
          response: { 200: Envelope(RetrySummarySchema), ...errorResponses() },
        },
      },
      async (req) => ok(req, retryMetrics.summary()),
    );

    app.get<{ Querystring: { hours: number } }>(
      '/metrics/retries/timeseries',
      {
        schema: {
          tags: TAG,
          summary: 'Retry metrics per hour',
          querystring: HoursQuery,
          response: { 200: Envelope(Type.Array(RetryHourSchema)), ...errorResponses(422) },
        },
      },
      async (req) => ok(req, retryMetrics.timeseries(req.query.hours)),
    );

    app.get<{ Querystring: { hours: number } }>(
      '/metrics/retries/by-proxy',
      {
        schema: {
          tags: TAG,
          summary: 'Retry metrics per proxy',
          querystring: HoursQuery,
          response: { 200: Envelope(Type.Record(Type.String(), RetryProxySchema)), ...errorResponses(422) },
        },
      },
      async (req) => ok(req, retryMetrics.byProxy(req.query.hours)),
    );
  };
}

/** Unversioned monitoring paths. `/metrics` is not in the OpenAPI document and never rate-limited. */
export function rootMetricsRoutes(services: Services): FastifyPluginAsync {
  const { retryMetrics, breakers, pool, clock, prom } = services;
  // With ROTA_PUBLIC_METRICS these answer without a key (auth.ts), and the document says so.
  const errors = services.config.publicMetrics ? publicErrorResponses : errorResponses;
  return async (app) => {
    app.get('/metrics', { config: { rateLimit: false }, schema: { hide: true } }, async (_req, reply) => {
      reply.type(prom.contentType);
      return prom.render();
    });

    app.get<{ Querystring: { hours: number; format?: 'json' | 'prometheus' } }>(
      '/metrics/retry',
      {
        config: { rateLimit: false },
        schema: {
          tags: TAG,
          summary: 'Retry metrics (JSON, or Prometheus text with format=prometheus)',
          querystring: FormatHoursQuery,
          response: { 200: jsonOrText(Envelope(RetryMetricsSchema)), ...errors(422) },
        },
      },
      async (req, reply) => {
        const data = retryMetrics.report(req.query.hours);
        if (req.query.format === 'prometheus')
          return reply
            .type(EXPOSITION_CONTENT_TYPE)
            .serializer(String)
            .send(renderRetryMetrics(data, req.query.hours));
        return ok(req, data);
      },
    );

    app.get<{ Querystring: { hours: number; format?: 'json' | 'prometheus' } }>(
      '/metrics/circuit-breaker',
      {
        config: { rateLimit: false },
        schema: {
          tags: TAG,
          summary: 'Circuit-breaker states and events (JSON, or Prometheus text with format=prometheus)',
          querystring: FormatHoursQuery,
          response: { 200: jsonOrText(Envelope(BreakerMetricsSchema)), ...errors(422) },
        },
      },
      async (req, reply) => {
        const hours = req.query.hours;
        const events = breakers.events(clock.now() - hours * 3_600_000);
        const states = pool.all().flatMap((e) => {
          breakers.add(e.record.id); // created on first use: an unused proxy's breaker is closed
          const s = breakers.snapshot(e.record.id);
          return s ? [s] : [];
        });
        if (req.query.format === 'prometheus') {
          // The event history keeps a deleted proxy's past, but no series may carry its id: the per-proxy
          // transitions are those of current members; the total still counts every event.
          const live = events.filter((e) => pool.get(e.proxy_id) !== undefined);
          return reply
            .type(EXPOSITION_CONTENT_TYPE)
            .serializer(String)
            .send(renderBreakerMetrics({ states, events: live, total_events: events.length, hours }));
        }
        return ok(req, {
          states: states.map(breakerView),
          events: events.map(eventView),
          total_events: events.length,
          hours,
        });
      },
    );
  };
}
