/**
 * Per-site analytics (src/requestlog/hosts/): `GET hosts`, the busiest target hosts over the last 15
 * minutes and hour; `GET hosts/{host}`, the same per proxy for one host. Per instance.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Static } from 'typebox';
import { RotaError } from '../../errors/rota-error.ts';
import { MAX_HOSTS } from '../../requestlog/hosts/hosts.ts';
import type { Totals } from '../../requestlog/hosts/slots.ts';
import { Envelope, errorResponses } from '../../schemas/common.ts';
import {
  HostDetailSchema,
  type HostDetailT,
  HostParams,
  HostsPageSchema,
  type HostsPageT,
  HostsQuery,
} from '../../schemas/hosts.ts';
import type { Services } from '../../services.ts';
import { ok } from '../envelope.ts';
import { ProxyLabels } from '../proxy-labels.ts';

const TAG = ['requests'];

/** A host's figures: successes of all calls. */
function hostFigures(t: Totals) {
  return { ...t, success_rate: t.requests === 0 ? null : t.successes / t.requests };
}

/** A proxy's figures for a host: bans are not its fault, so they leave its success rate. */
function proxyFigures(t: Totals) {
  const judged = t.requests - t.bans;
  return { ...t, success_rate: judged === 0 ? null : (judged - t.failures) / judged };
}

export function hostRoutes(services: Services): FastifyPluginAsync {
  const { hosts, cooldowns } = services;
  const labels = new ProxyLabels(services.pool, services.clock.now);
  return async (app) => {
    app.get<{ Querystring: Static<typeof HostsQuery> }>(
      '/hosts',
      {
        schema: {
          tags: TAG,
          summary: 'The busiest target hosts: calls, success rate, bans, latency, bytes',
          description:
            'Over the last 15 minutes and the last hour (5-minute slots). The hosts are the top 1,000 ' +
            'kept by a heavy-hitters sketch (Space-Saving); a host not among them is not listed. This ' +
            'instance only.',
          querystring: HostsQuery,
          response: { 200: Envelope(HostsPageSchema), ...errorResponses(422) },
        },
      },
      async (req) => {
        const items = hosts.top(req.query.limit).map((r) => ({
          host: r.host,
          last_15m: hostFigures(r.last_15m),
          last_1h: hostFigures(r.last_1h),
          cooling_down: cooldowns.active(r.host).length,
          count_error: r.count_error,
        }));
        const page: HostsPageT = { items, tracked: hosts.size, max_tracked: MAX_HOSTS, scope: 'instance' };
        return ok(req, page);
      },
    );

    app.get<{ Params: Static<typeof HostParams> }>(
      '/hosts/:host',
      {
        schema: {
          tags: TAG,
          summary: "One host's figures, and each proxy's for it",
          description:
            "A proxy's failures are its own faults; bans are counted apart and leave its success rate. " +
            'This instance only.',
          params: HostParams,
          response: { 200: Envelope(HostDetailSchema), ...errorResponses(404, 422) },
        },
      },
      async (req) => {
        const host = req.params.host.toLowerCase();
        const found = hosts.host(host);
        if (found === null) throw new RotaError('NOT_FOUND', `No calls to ${host} are tracked`);
        const active = cooldowns.active(host);
        // A gateway's provider session cooling is not the gateway cooling: it stays in use (outbound/gateways.ts).
        const cooling = new Map(active.filter((c) => c.exit === undefined).map((c) => [c.proxyId, c.until]));
        const detail: HostDetailT = {
          host,
          last_15m: hostFigures(found.row.last_15m),
          last_1h: hostFigures(found.row.last_1h),
          cooling_down: cooling.size,
          count_error: found.row.count_error,
          proxies: found.proxies.map((p) => ({
            proxy_id: p.proxy_id,
            proxy_label: labels.labelOf(p.proxy_id),
            last_15m: proxyFigures(p.last_15m),
            last_1h: proxyFigures(p.last_1h),
            cooling_until: cooling.get(p.proxy_id) ?? null,
          })),
          scope: 'instance',
        };
        return ok(req, detail);
      },
    );
  };
}
