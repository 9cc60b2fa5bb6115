import { Readable } from 'node:stream';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { RotaError } from '../../errors/rota-error.ts';
import type { ProxyEntry } from '../../pool/pool.ts';
import type { StatusFilter } from '../../pool/types.ts';
import { proxyView, proxyWithCredentials } from '../../pool/view.ts';
import { Envelope, errorResponses, STORAGE_UNAVAILABLE } from '../../schemas/common.ts';
import {
  AddProxyBody,
  type AddProxyBodyT,
  ExportQuery,
  ListQuery,
  type ListQueryT,
  PatchProxyBody,
  type PatchProxyBodyT,
  ProxyIdParams,
  ProxyPage,
  ProxySchema,
} from '../../schemas/proxy.ts';
import type { Services } from '../../services.ts';
import { ok } from '../envelope.ts';
import { routeOf } from '../hooks.ts';
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
function ndjson(services: Services, filter: StatusFilter | undefined, credentials: boolean): Readable {
  const { pool } = services;
  const it = pool.iterate(filter);
  const line = credentials ? proxyWithCredentials : proxyView;
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
        more = this.push(`${JSON.stringify(line(pool, next.value))}\n`);
      }
    },
  });
}

/** The audit line of an export with credentials (the route's GET is not audited otherwise). */
function auditCredentialExport(services: Services, req: FastifyRequest): void {
  services.audit.record({
    action: 'proxy.export_credentials',
    request_id: req.id,
    client_ip: req.clientIp,
    method: req.method,
    route: routeOf(req),
    status: 200,
    outcome: 'success',
    params: req.query,
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
      app.get<{ Querystring: { status_filter?: StatusFilter; credentials: boolean } }>(
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
          const { status_filter, credentials } = req.query;
          // Credentials leave only to a caller with the key, whenever there is a key (auth required or not).
          if (credentials && services.config.apiKey && !req.apiKeyValid) {
            throw new RotaError('UNAUTHORIZED', 'An export with credentials needs the API key');
          }
          // Every export that holds credentials has its audit line, written before the first one leaves.
          if (credentials) auditCredentialExport(services, req);
          reply.type('application/x-ndjson; charset=utf-8').header('cache-control', 'no-store');
          return reply.send(ndjson(services, status_filter, credentials));
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

    app.patch<{ Params: { proxy_id: string }; Body: PatchProxyBodyT }>(
      '/proxies/:proxy_id',
      {
        config: { audit: 'proxy.update' },
        schema: {
          tags: TAG,
          summary: 'Change a proxy (weight, country, tags, label, credentials, templates)',
          description:
            'Only the fields given change; null clears one. 409 when a new username makes it a duplicate ' +
            'of another member (same URL and username). Credentials and templates are never returned.',
          params: ProxyIdParams,
          body: PatchProxyBody,
          response: {
            200: Envelope(ProxySchema),
            ...errorResponses(404, 409, 413, 415, 422, STORAGE_UNAVAILABLE),
          },
        },
      },
      async (req) => {
        const entry: ProxyEntry | null = await pool.update(req.params.proxy_id, req.body);
        if (!entry) throw notFound(req.params.proxy_id);
        return ok(req, proxyView(pool, entry));
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
