import type { FastifyPluginAsync } from 'fastify';
import { type Static, Type } from 'typebox';
import { STRATEGIES } from '../../config.ts';
import {
  crossCheck,
  type RetryPolicyHolder,
  RetryPolicySchema,
  type RetryPolicyUpdate,
  RetryPolicyUpdateSchema,
} from '../../outbound/retry-policy.ts';
import type { Services } from '../../services.ts';
import { ok } from '../envelope.ts';
import { ApiError, type DetailItem } from '../errors.ts';
import { routeLimit } from '../rate-limit.ts';
import { Envelope, errorResponses } from '../schemas/common.ts';

const RateLimits = Type.Object({
  default_limit: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
  request_endpoint_limit: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
});

const ConfigView = Type.Object({
  rotation_strategy: Type.Enum([...STRATEGIES]),
  timeout: Type.Integer({ minimum: 1, maximum: 300 }),
  max_retries: Type.Integer({ minimum: 1, maximum: 10 }),
  rate_limits: RateLimits,
  auth_enabled: Type.Boolean(),
  cors_origins: Type.Array(Type.String()),
});

const ConfigUpdate = Type.Object(
  {
    rotation_strategy: Type.Optional(Type.Enum([...STRATEGIES])),
    timeout: Type.Optional(Type.Integer({ minimum: 1, maximum: 300 })),
    max_retries: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
    rate_limits: Type.Optional(Type.Partial(RateLimits, { additionalProperties: false })),
    cors_origins: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { maxItems: 100 })),
  },
  { additionalProperties: false },
);
type ConfigUpdateT = Static<typeof ConfigUpdate>;

const ORIGIN = /^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?$|^https?:\/\/\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

function invalidConfig(items: DetailItem[]): ApiError {
  return new ApiError('INVALID_CONFIGURATION', 'Invalid configuration values', {
    details: items,
    detail: items,
  });
}

function item(loc: string[], msg: string, input: unknown): DetailItem {
  return { loc: ['body', ...loc], msg, type: 'value_error', input, ctx: {} };
}

function view(services: Services, retry: RetryPolicyHolder) {
  const s = services.settings.get();
  return {
    rotation_strategy: s.rotation_strategy,
    timeout: s.timeout,
    max_retries: retry.get().max_attempts,
    rate_limits: { ...s.rate_limits },
    auth_enabled: services.config.requireAuth,
    cors_origins: [...s.cors_origins],
  };
}

function checkOrigins(origins: string[] | undefined, allowCredentials: boolean): DetailItem[] {
  if (!origins) return [];
  const out: DetailItem[] = [];
  origins.forEach((o, i) => {
    if (o === '*') {
      if (allowCredentials)
        out.push(
          item(
            ['cors_origins', String(i)],
            'The wildcard "*" cannot be combined with credentials (ROTA_CORS_ALLOW_CREDENTIALS=true)',
            o,
          ),
        );
    } else if (!ORIGIN.test(o)) {
      out.push(item(['cors_origins', String(i)], 'An origin is scheme://host[:port] with no path', o));
    }
  });
  return out;
}

export function configRoutes(services: Services, retry: RetryPolicyHolder): FastifyPluginAsync {
  return async (app) => {
    app.get(
      '/config',
      {
        schema: {
          tags: ['config'],
          summary: 'Current runtime configuration',
          response: { 200: Envelope(ConfigView), ...errorResponses() },
        },
      },
      async (req) => ok(req, view(services, retry)),
    );

    app.put<{ Body: ConfigUpdateT }>(
      '/config',
      {
        config: {
          validation: 'config',
          audit: 'config.update',
          rateLimit: routeLimit('config', services.config, services.settings),
        },
        schema: {
          tags: ['config'],
          summary: 'Change the runtime configuration (partial); applies to the next request',
          body: ConfigUpdate,
          response: { 200: Envelope(ConfigView), ...errorResponses(400, 413, 415) },
        },
      },
      async (req) => {
        const { max_retries, ...rest } = req.body;
        const problems = checkOrigins(rest.cors_origins, services.config.corsAllowCredentials);
        if (problems.length > 0) throw invalidConfig(problems);
        await services.settings.update(rest);
        if (max_retries !== undefined) await retry.update({ max_attempts: max_retries });
        return ok(req, view(services, retry));
      },
    );

    app.get(
      '/retry/policy',
      {
        schema: {
          tags: ['config'],
          summary: 'Current retry policy',
          response: { 200: Envelope(RetryPolicySchema), ...errorResponses() },
        },
      },
      async (req) => ok(req, retry.get()),
    );

    app.put<{ Body: RetryPolicyUpdate }>(
      '/retry/policy',
      {
        config: { validation: 'config', audit: 'retry_policy.update' },
        schema: {
          tags: ['config'],
          summary: 'Change the retry policy (partial; an explicit null resets `timeout`)',
          body: RetryPolicyUpdateSchema,
          response: { 200: Envelope(RetryPolicySchema), ...errorResponses(400, 413, 415) },
        },
      },
      async (req) => {
        const next = { ...retry.get(), ...req.body };
        const problems = crossCheck(next).map((m) => item(['max_backoff_delay'], m, next.max_backoff_delay));
        if (problems.length > 0) throw invalidConfig(problems);
        return ok(req, await retry.update(req.body));
      },
    );
  };
}
