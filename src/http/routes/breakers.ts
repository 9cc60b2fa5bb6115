import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import type { BreakerEvent, BreakerSnapshot } from '../../breaker/types.ts';
import { RotaError } from '../../errors/rota-error.ts';
import { Envelope, errorResponses } from '../../schemas/common.ts';
import { BreakerEventSchema, BreakerStateSchema, HoursQuery } from '../../schemas/metrics.ts';
import { ProxyIdParams } from '../../schemas/proxy.ts';
import type { Services } from '../../services.ts';
import { ok } from '../envelope.ts';
import { routeLimit } from '../rate-limit.ts';

const TAG = ['circuit-breakers'];
const iso = (ms: number) => new Date(ms).toISOString();

export function breakerView(s: BreakerSnapshot) {
  return {
    ...s,
    next_test_time: s.next_test_time === null ? null : iso(s.next_test_time),
    last_state_change: iso(s.last_state_change),
  };
}

export function eventView(e: BreakerEvent) {
  return { ...e, timestamp: iso(e.timestamp) };
}

export function breakerRoutes(services: Services): FastifyPluginAsync {
  const { breakers, pool, clock } = services;
  const snapshotOf = (id: string) => {
    // Breakers are created on first use; a proxy that never had one is simply closed.
    if (pool.get(id)) breakers.add(id);
    const s = pool.get(id) ? breakers.snapshot(id) : undefined;
    if (!s)
      throw new RotaError('PROXY_NOT_FOUND', 'No circuit breaker for this proxy', {
        details: { proxy_id: id.slice(0, 64) },
      });
    return s;
  };
  return async (app) => {
    app.get(
      '/circuit-breakers',
      {
        schema: {
          tags: TAG,
          summary: 'Every circuit breaker',
          response: { 200: Envelope(Type.Array(BreakerStateSchema)), ...errorResponses() },
        },
      },
      async (req) =>
        ok(
          req,
          pool.all().map((e) => breakerView(snapshotOf(e.record.id))),
        ),
    );

    app.get<{ Querystring: { hours: number } }>(
      '/circuit-breakers/metrics',
      {
        schema: {
          tags: TAG,
          summary: 'Circuit-breaker state changes within the last `hours`',
          querystring: HoursQuery,
          response: { 200: Envelope(Type.Array(BreakerEventSchema)), ...errorResponses(422) },
        },
      },
      async (req) => ok(req, breakers.events(clock.now() - req.query.hours * 3_600_000).map(eventView)),
    );

    app.get<{ Params: { proxy_id: string } }>(
      '/circuit-breakers/:proxy_id',
      {
        schema: {
          tags: TAG,
          summary: 'One circuit breaker',
          params: ProxyIdParams,
          response: { 200: Envelope(BreakerStateSchema), ...errorResponses(404, 422) },
        },
      },
      async (req) => ok(req, breakerView(snapshotOf(req.params.proxy_id))),
    );

    app.post<{ Params: { proxy_id: string } }>(
      '/circuit-breakers/:proxy_id/reset',
      {
        config: {
          audit: 'breaker.reset',
          rateLimit: routeLimit('reset', services.config, services.settings),
        },
        schema: {
          tags: TAG,
          summary: 'Close a circuit breaker now',
          params: ProxyIdParams,
          response: { 200: Envelope(BreakerStateSchema), ...errorResponses(404, 413, 415, 422) },
        },
      },
      async (req) => {
        snapshotOf(req.params.proxy_id);
        breakers.reset(req.params.proxy_id);
        return ok(req, breakerView(snapshotOf(req.params.proxy_id)));
      },
    );
  };
}
