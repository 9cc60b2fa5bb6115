/**
 * `GET/PUT /api/v1/sources`: the proxy sources (lists Rota fetches and adds proxies from, see
 * src/sources/) with each one's last fetch. PUT replaces the whole list, persisted; every problem is
 * reported in one 400 INVALID_CONFIGURATION and then nothing changes.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { Envelope, errorResponses, Nullable } from '../../schemas/common.ts';
import type { Services } from '../../services.ts';
import {
  normalize,
  SourceConfigSchema,
  type SourceInput,
  SourceListInputSchema,
  sourceProblems,
} from '../../sources/config.ts';
import { withKeptHeaders } from '../../sources/headers.ts';
import { ok } from '../envelope.ts';
import { invalidConfig, schemaProblems } from '../problems.ts';
import { routeLimit } from '../rate-limit.ts';

const SourceView = Type.Object({
  ...SourceConfigSchema.properties,
  last_fetch_at: Nullable(Type.String({ format: 'date-time' })),
  last_count: Nullable(Type.Integer({ description: 'Proxies the last answer listed' })),
  last_added: Nullable(Type.Integer({ description: 'Proxies the last fetch added to the pool' })),
  last_invalid: Nullable(Type.Integer({ description: 'Entries of the last answer that are not proxies' })),
  last_rejected: Nullable(Type.Integer({ description: 'New proxies that failed the health check' })),
  last_error: Nullable(Type.String()),
});

const SourceList = Type.Array(SourceView);

export function sourceRoutes(services: Services): FastifyPluginAsync {
  const { sources } = services;
  return async (app) => {
    app.get(
      '/sources',
      {
        schema: {
          tags: ['sources'],
          summary: 'Proxy sources and their last fetch',
          response: { 200: Envelope(SourceList), ...errorResponses() },
        },
      },
      async (req) => ok(req, sources.list()),
    );

    app.put<{ Body: SourceInput[] }>(
      '/sources',
      {
        attachValidation: true,
        config: {
          validation: 'config',
          audit: 'sources.update',
          rateLimit: routeLimit('config', services.config, services.settings),
        },
        schema: {
          tags: ['sources'],
          summary: 'Replace the proxy sources (each is fetched now, then every refresh_s)',
          description:
            'Each source is fetched through the SSRF rules, with a deadline and a byte cap ' +
            '(ROTA_MAX_IMPORT_BYTES), redirects not followed; its new proxies are health-checked first when ' +
            '`validate`, and join the pool tagged source:NAME. A failed fetch never removes a proxy. Every ' +
            'invalid value is reported (400 INVALID_CONFIGURATION) and then nothing is changed. `headers` ' +
            '(a token for the list) are stored encrypted and answered as names only, each value `***`; ' +
            '`***` sent back keeps the stored value. Query values of `url` are answered masked.',
          body: SourceListInputSchema,
          response: { 200: Envelope(SourceList), ...errorResponses(400, 413, 415, 422) },
        },
      },
      async (req) => {
        const current = sources.configs();
        const problems = [
          ...schemaProblems(req),
          ...(await sourceProblems(req.body, services.ssrf, current)),
        ];
        if (problems.length > 0) throw invalidConfig(problems);
        return ok(req, await sources.replace(req.body.map((s) => withKeptHeaders(normalize(s), current))));
      },
    );
  };
}
