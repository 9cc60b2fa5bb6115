import type { FastifyPluginAsync } from 'fastify';
import { type Static, Type } from 'typebox';
import { RotaError } from '../../errors/rota-error.ts';
import { policyProblems } from '../../policies/holder.ts';
import { type PolicyList, PolicyListSchema } from '../../policies/schema.ts';
import { Envelope, errorResponses, Nullable, STORAGE_UNAVAILABLE } from '../../schemas/common.ts';
import type { Services } from '../../services.ts';
import { ok } from '../envelope.ts';
import { invalidConfig, isRecord, item, schemaProblems } from '../problems.ts';
import { routeLimit } from '../rate-limit.ts';

/**
 * Per-site policies (policies/) and the sessions they shape (rotation/sessions.ts): read and replace the
 * rule list (persisted, and on every instance within a second through the change bus), list the live
 * sessions of this instance, end one on every instance.
 */

const SessionsQuery = Type.Object(
  {
    page: Type.Integer({ minimum: 1, maximum: 10_000_000, default: 1 }),
    page_size: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
  },
  { additionalProperties: false },
);

const SessionParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 256, description: 'The session id the client gave' }) },
  { additionalProperties: false },
);

const SessionView = Type.Object({
  id: Type.String(),
  host: Nullable(
    Type.String({ description: 'The target host of a `scope: host` session; null: every host' }),
  ),
  proxy_id: Type.String({ format: 'uuid' }),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.String({ format: 'date-time' }),
  requests: Type.Integer({ minimum: 0, description: 'Picks of its proxy since it was pinned' }),
});

const SessionsPage = Type.Object({
  items: Type.Array(SessionView),
  total: Type.Integer(),
  page: Type.Integer(),
  page_size: Type.Integer(),
  has_next: Type.Boolean(),
});

const iso = (ms: number) => new Date(ms).toISOString();

export function policyRoutes(services: Services): FastifyPluginAsync {
  const { policies } = services;
  const sessions = services.selector.sessionTable;
  return async (app) => {
    app.get(
      '/policies',
      {
        schema: {
          tags: ['policies'],
          summary: 'The per-site policy rules, in order',
          description:
            'The first rule whose `match` fits a call applies to it, on every door; the global settings ' +
            'fill what it leaves out.',
          response: { 200: Envelope(PolicyListSchema), ...errorResponses() },
        },
      },
      async (req) => ok(req, policies.get()),
    );

    app.put<{ Body: PolicyList }>(
      '/policies',
      {
        attachValidation: true,
        config: {
          validation: 'config',
          audit: 'policies.update',
          rateLimit: routeLimit('config', services.config, services.settings),
        },
        schema: {
          tags: ['policies'],
          summary: 'Replace the per-site policy rules (at most 200)',
          description:
            'Every invalid value is reported (400 INVALID_CONFIGURATION, `loc` naming the rule and the ' +
            'field) and then nothing is changed. Host patterns are kept in canonical form. The list is ' +
            'kept across restarts and reaches every instance sharing the store and Redis within a second.',
          body: PolicyListSchema,
          response: {
            200: Envelope(PolicyListSchema),
            ...errorResponses(400, 413, 415, 422, STORAGE_UNAVAILABLE),
          },
        },
      },
      async (req) => {
        const fromSchema = schemaProblems(req);
        const cross =
          fromSchema.length === 0 && isRecord(req.body)
            ? policyProblems(req.body).map((p) => item(p.loc, p.msg, p.input))
            : [];
        const problems = [...fromSchema, ...cross];
        if (problems.length > 0) throw invalidConfig(problems);
        return ok(req, await policies.replace(req.body));
      },
    );

    app.get<{ Querystring: Static<typeof SessionsQuery> }>(
      '/sessions',
      {
        schema: {
          tags: ['sessions'],
          summary: "This instance's live sessions, most recently used first",
          description:
            'Pins are shared between instances through Redis; the request counts and times are those of ' +
            'this instance.',
          querystring: SessionsQuery,
          response: { 200: Envelope(SessionsPage), ...errorResponses(422) },
        },
      },
      async (req) => {
        const { page, page_size } = req.query;
        const all = sessions.list();
        const start = (page - 1) * page_size;
        const items = all.slice(start, start + page_size).map((s) => ({
          id: s.id,
          host: s.host,
          proxy_id: s.proxyId,
          created_at: iso(s.createdAt),
          last_used_at: iso(s.lastUsed),
          requests: s.requests,
        }));
        return ok(req, {
          items,
          total: all.length,
          page,
          page_size,
          has_next: start + page_size < all.length,
        });
      },
    );

    app.delete<{ Params: Static<typeof SessionParams> }>(
      '/sessions/:id',
      {
        config: { audit: 'sessions.end' },
        schema: {
          tags: ['sessions'],
          summary: 'End a session (every host of it) on every instance: its next request is pinned anew',
          params: SessionParams,
          response: { 204: Type.Null({ description: 'Ended' }), ...errorResponses(404, 413, 415, 422) },
        },
      },
      async (req, reply) => {
        if (sessions.end(req.params.id) === 0) {
          throw new RotaError('SESSION_NOT_FOUND', 'No live session with this id');
        }
        reply.code(204);
        return null;
      },
    );
  };
}
