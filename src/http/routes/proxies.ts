import { Readable } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { RotaError } from '../../errors/rota-error.ts';
import type { StatusFilter } from '../../pool/types.ts';
import { proxyView } from '../../pool/view.ts';
import { Envelope, errorResponses, STORAGE_UNAVAILABLE } from '../../schemas/common.ts';
import {
  AddProxyBody,
  type AddProxyBodyT,
  ExportQuery,
  ListQuery,
  type ListQueryT,
  ProxyIdParams,
  ProxyPage,
  ProxySchema,
} from '../../schemas/proxy.ts';
import type { Services } from '../../services.ts';
import { ok } from '../envelope.ts';
import { routeLimit } from '../rate-limit.ts';

const TAG = ['proxies'];

function notFound(id: string): RotaError {
  return new RotaError('PROXY_NOT_FOUND', 'Proxy not found', { details: { proxy_id: id.slice(0, 64) } });
}

/**
 * NDJSON, one proxy per line, pulled by the socket: a line is rendered only when the client is ready for
 * it, so exporting 100,000 proxies never holds them all as text.
 *
 *   pool snapshot (array of refs) ──▶ generator ──▶ Readable (backpressure) ──▶ client
 */
function ndjson(services: Services, filter: StatusFilter | undefined): Readable {
  const { pool } = services;
  const it = pool.iterate(filter);
  return new Readable({
    highWaterMark: 64 * 1024,
    read() {
      let more = true;
      while (more) {
        const next = it.next();
        if (next.done) {
          this.push(null);
          return;
        }
        more = this.push(`${JSON.stringify(proxyView(pool, next.value))}\n`);
      }
    },
  });
}

export function proxyRoutes(services: Services): FastifyPluginAsync {
  return async (app) => {
    const { pool } = services;

    app.get<{ Querystring: ListQueryT }>(
      '/proxies',
      {
        schema: {
          tags: TAG,
          summary: 'List proxies (creation order)',
          querystring: ListQuery,
          response: { 200: Envelope(ProxyPage), ...errorResponses(422) },
        },
      },
      async (req) => {
        const { page, page_size, status_filter } = req.query;
        const { items, total } = pool.page(page, page_size, status_filter);
        return ok(req, {
          items: items.map((e) => proxyView(pool, e)),
          total,
          page,
          page_size,
          has_next: page * page_size < total,
          has_prev: page > 1,
        });
      },
    );

    app.post<{ Body: AddProxyBodyT }>(
      '/proxies',
      {
        config: {
          validation: 'proxy',
          audit: 'proxy.add',
          rateLimit: routeLimit('addProxy', services.config, services.settings),
        },
        schema: {
          tags: TAG,
          summary: 'Add a proxy',
          description:
            'Credentials may be given as fields or as user:pass@ in the URL; they are never returned.',
          body: AddProxyBody,
          response: {
            201: Envelope(ProxySchema, 'Created'),
            ...errorResponses(400, 409, 413, 415, 422, STORAGE_UNAVAILABLE),
          },
        },
      },
      async (req, reply) => {
        const entry = await pool.add(req.body);
        reply.code(201).header('location', `/api/v1/proxies/${entry.record.id}`);
        return ok(req, proxyView(pool, entry));
      },
    );

    for (const path of ['/proxies/export', '/proxies/stream']) {
      app.get<{ Querystring: { status_filter?: StatusFilter } }>(
        path,
        {
          schema: {
            tags: TAG,
            summary: path.endsWith('export')
              ? 'Export proxies as NDJSON'
              : 'Stream proxies as NDJSON (same as export)',
            querystring: ExportQuery,
            produces: ['application/x-ndjson'],
            response: {
              200: {
                description: 'One proxy (as in GET proxies/{id}) per line',
                content: { 'application/x-ndjson': { schema: Type.String() } },
              },
              ...errorResponses(422),
            },
          },
        },
        async (req, reply) => {
          reply.type('application/x-ndjson; charset=utf-8').header('cache-control', 'no-store');
          return reply.send(ndjson(services, req.query.status_filter));
        },
      );
    }

    app.get<{ Params: { proxy_id: string } }>(
      '/proxies/:proxy_id',
      {
        schema: {
          tags: TAG,
          summary: 'Get one proxy',
          params: ProxyIdParams,
          response: { 200: Envelope(ProxySchema), ...errorResponses(404, 422) },
        },
      },
      async (req) => {
        const e = pool.get(req.params.proxy_id);
        if (!e) throw notFound(req.params.proxy_id);
        return ok(req, proxyView(pool, e));
      },
    );

    app.delete<{ Params: { proxy_id: string } }>(
      '/proxies/:proxy_id',
      {
        config: { audit: 'proxy.delete' },
        schema: {
          tags: TAG,
          summary: 'Remove a proxy',
          params: ProxyIdParams,
          response: {
            204: Type.Null({ description: 'Removed' }),
            ...errorResponses(404, 413, 415, 422, STORAGE_UNAVAILABLE),
          },
        },
      },
      async (req, reply) => {
        if (!(await pool.remove(req.params.proxy_id))) throw notFound(req.params.proxy_id);
        return reply.code(204).send();
      },
    );
  };
}
