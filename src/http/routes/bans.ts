import type { FastifyPluginAsync } from 'fastify';
import { type Static, Type } from 'typebox';
import {
  BanPolicySchema,
  type BanPolicyUpdate,
  BanPolicyUpdateSchema,
  banPolicyProblems,
} from '../../bans/policy.ts';
import { cooldownView, reportBan } from '../../bans/report.ts';
import { BanReportBody as BanReport, BansQuery, BAN_HOST_PATTERN as HOST } from '../../schemas/bans.ts';
import { Envelope, errorResponses, STORAGE_UNAVAILABLE } from '../../schemas/common.ts';
import { withNonBlankPatterns } from '../../schemas/config.ts';
import type { Services } from '../../services.ts';
import { ok } from '../envelope.ts';
import { invalidConfig, isRecord, item, schemaProblems } from '../problems.ts';
import { routeLimit } from '../rate-limit.ts';

/**
 * The ban policy and the cool-down table (bans/): read and change the policy (persisted like the config),
 * list the active cool-downs, and end them.
 */

const ClearQuery = Type.Object(
  { host: Type.Optional(Type.String({ pattern: HOST, description: 'Only this host; without it, all' })) },
  { additionalProperties: false },
);

const CooldownView = Type.Object({
  proxy_id: Type.String({ format: 'uuid' }),
  host: Type.String(),
  until: Type.String({ format: 'date-time' }),
  count: Type.Integer({ minimum: 1, description: 'Bans of this pair in a row (the cool-down doubles)' }),
  exit: Type.Optional(
    Type.String({
      description:
        "A provider gateway's bans are per exit (provider session): a digest telling its exits apart",
    }),
  ),
});

const BansPage = Type.Object({
  items: Type.Array(CooldownView),
  total: Type.Integer(),
  page: Type.Integer(),
  page_size: Type.Integer(),
  has_next: Type.Boolean(),
});

export function banRoutes(services: Services): FastifyPluginAsync {
  const { banPolicy, cooldowns } = services;
  return async (app) => {
    app.get(
      '/ban-policy',
      {
        schema: {
          tags: ['bans'],
          summary: 'Current ban policy',
          response: { 200: Envelope(BanPolicySchema), ...errorResponses() },
        },
      },
      async (req) => ok(req, banPolicy.get()),
    );

    app.put<{ Body: BanPolicyUpdate }>(
      '/ban-policy',
      {
        attachValidation: true,
        config: {
          validation: 'config',
          audit: 'ban_policy.update',
          rateLimit: routeLimit('config', services.config, services.settings),
        },
        schema: {
          tags: ['bans'],
          summary: 'Change the ban policy (partial)',
          description:
            'Every invalid value is reported (400 INVALID_CONFIGURATION) and then nothing is changed. ' +
            'Patterns are plain case-insensitive substrings of the first 64 KiB of a body. `max_cooldown_s` ' +
            'must be at least the `cooldown_s` of the policy the update leaves (the current one for a field ' +
            'not given).',
          body: withNonBlankPatterns(BanPolicyUpdateSchema),
          response: {
            200: Envelope(BanPolicySchema),
            ...errorResponses(400, 413, 415, 422, STORAGE_UNAVAILABLE),
          },
        },
      },
      async (req) => {
        const fromSchema = schemaProblems(req);
        const cross =
          fromSchema.length === 0 && isRecord(req.body)
            ? banPolicyProblems(banPolicy.get(), req.body).map((m) => item([m.split(' ')[0] ?? ''], m, null))
            : [];
        const problems = [...fromSchema, ...cross];
        if (problems.length > 0) throw invalidConfig(problems);
        const policy = await banPolicy.update(req.body);
        if (services.store.backend !== 'memory') services.settings.markStored();
        return ok(req, policy);
      },
    );

    app.get<{ Querystring: Static<typeof BansQuery> }>(
      '/bans',
      {
        schema: {
          tags: ['bans'],
          summary: 'Active cool-downs of (proxy, host) pairs, oldest ban first',
          querystring: BansQuery,
          response: { 200: Envelope(BansPage), ...errorResponses(422) },
        },
      },
      async (req) => {
        const { host, page, page_size } = req.query;
        const all = cooldowns.active(host?.toLowerCase());
        const start = (page - 1) * page_size;
        const items = all.slice(start, start + page_size).map(cooldownView);
        return ok(req, {
          items,
          total: all.length,
          page,
          page_size,
          has_next: start + page_size < all.length,
        });
      },
    );

    app.post<{ Body: Static<typeof BanReport> }>(
      '/bans',
      {
        config: { audit: 'bans.report', rateLimit: routeLimit('config', services.config, services.settings) },
        schema: {
          tags: ['bans'],
          summary: 'Report a ban the client saw (inside a tunnel Rota does not open)',
          description:
            'The pair (proxy, host) cools down exactly as after a ban Rota saw itself: the same table, the ' +
            "doubling on repeats, the ban policy's max_cooldown_s, and every instance is told. The proxy of a " +
            'tunnel is in the `X-Rota-Proxy-Id` header of the CONNECT answer.',
          body: BanReport,
          response: { 201: Envelope(CooldownView), ...errorResponses(404, 413, 415, 422) },
        },
      },
      async (req, reply) => {
        const known = (id: string) => services.pool.get(id) !== undefined;
        const reported = reportBan({ bans: services.bans, known, exitOf: services.exitOf }, req.body);
        reply.code(201);
        return ok(req, reported);
      },
    );

    app.delete<{ Querystring: Static<typeof ClearQuery> }>(
      '/bans',
      {
        config: { audit: 'bans.clear' },
        schema: {
          tags: ['bans'],
          summary: "End the cool-downs of a host (without `host`: every host's)",
          querystring: ClearQuery,
          response: { 204: Type.Null({ description: 'Cleared' }), ...errorResponses(413, 415, 422) },
        },
      },
      async (req, reply) => {
        cooldowns.clear(req.query.host?.toLowerCase());
        reply.code(204);
        return null;
      },
    );
  };
}
