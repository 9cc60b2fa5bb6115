import type { FastifyPluginAsync } from 'fastify';
import { type Static, Type } from 'typebox';
import { STRATEGIES } from '../../config.ts';
import { configView } from '../../control/status.ts';
import type { DetailItem } from '../../errors/rota-error.ts';
import {
  crossCheck,
  type RetryPolicy,
  type RetryPolicyHolder,
  RetryPolicySchema,
  type RetryPolicyUpdate,
  RetryPolicyUpdateSchema,
} from '../../outbound/retry-policy.ts';
import { Envelope, errorResponses, STORAGE_UNAVAILABLE } from '../../schemas/common.ts';
import { withCorsOriginPattern } from '../../schemas/config.ts';
import type { Services } from '../../services.ts';
import { ok } from '../envelope.ts';
import { invalidConfig, isRecord, item, schemaProblems } from '../problems.ts';
import { routeLimit } from '../rate-limit.ts';

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

function view(services: Services, retry: RetryPolicyHolder) {
  return configView({ settings: services.settings, retry, requireAuth: services.config.requireAuth });
}

/** Origins the schema cannot judge: the shape of each one, and `*` against credentials. */
function checkOrigins(body: unknown, allowCredentials: boolean): DetailItem[] {
  const origins = isRecord(body) ? body.cors_origins : undefined;
  if (!Array.isArray(origins)) return [];
  const out: DetailItem[] = [];
  origins.forEach((o: unknown, i) => {
    if (typeof o !== 'string') return; // the schema reports it
    if (o === '*') {
      if (allowCredentials)
        out.push(
          item(
            ['cors_origins', i],
            'The wildcard "*" cannot be combined with credentials (ROTA_CORS_ALLOW_CREDENTIALS=true)',
            o,
          ),
        );
    } else if (!ORIGIN.test(o)) {
      out.push(item(['cors_origins', i], 'An origin is scheme://host[:port] with no path', o));
    }
  });
  return out;
}

/** The cross-field rules of the retry policy, on the policy the update would produce. */
function policyProblems(current: RetryPolicy, body: unknown, schemaItems: DetailItem[]): DetailItem[] {
  if (!isRecord(body)) return [];
  // A field the schema already refused has no value to compare with.
  const refused = new Set(schemaItems.map((d) => d.loc[1]));
  if (['base_delay', 'max_backoff_delay', 'backoff_strategy'].some((k) => refused.has(k))) return [];
  const next = { ...current, ...(body as RetryPolicyUpdate) };
  return crossCheck(next).map((m) => item(['max_backoff_delay'], m, next.max_backoff_delay));
}

/**
 * Settings first, then the retry policy (`max_retries`); when the second write fails the first is undone,
 * so that a failed PUT leaves the configuration as it was.
 */
async function apply(services: Services, retry: RetryPolicyHolder, body: ConfigUpdateT): Promise<void> {
  const { max_retries, ...rest } = body;
  const before = services.settings.state();
  await services.settings.update(rest);
  if (max_retries === undefined) return;
  try {
    await retry.update({ max_attempts: max_retries });
  } catch (err) {
    await services.settings.restore(before);
    throw err;
  }
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
        attachValidation: true,
        config: {
          validation: 'config',
          audit: 'config.update',
          rateLimit: routeLimit('config', services.config, services.settings),
        },
        schema: {
          tags: ['config'],
          summary: 'Change the runtime configuration (partial); applies to the next request',
          description:
            'Every invalid value is reported (400 INVALID_CONFIGURATION) and then nothing is changed.',
          body: withCorsOriginPattern(ConfigUpdate, services.config.corsAllowCredentials),
          response: { 200: Envelope(ConfigView), ...errorResponses(400, 413, 415, 422, STORAGE_UNAVAILABLE) },
        },
      },
      async (req) => {
        const problems = [
          ...schemaProblems(req),
          ...checkOrigins(req.body, services.config.corsAllowCredentials),
        ];
        if (problems.length > 0) throw invalidConfig(problems);
        await apply(services, retry, req.body);
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
        attachValidation: true,
        config: { validation: 'config', audit: 'retry_policy.update' },
        schema: {
          tags: ['config'],
          summary: 'Change the retry policy (partial; an explicit null resets `timeout`)',
          description:
            'Every invalid value is reported (400 INVALID_CONFIGURATION) and then nothing is changed. ' +
            '`max_backoff_delay` must be at least the `base_delay` of the policy the update leaves (the ' +
            'current one for a field not given).',
          body: RetryPolicyUpdateSchema,
          response: {
            200: Envelope(RetryPolicySchema),
            ...errorResponses(400, 413, 415, 422, STORAGE_UNAVAILABLE),
          },
        },
      },
      async (req) => {
        const fromSchema = schemaProblems(req);
        const problems = [...fromSchema, ...policyProblems(retry.get(), req.body, fromSchema)];
        if (problems.length > 0) throw invalidConfig(problems);
        const policy = await retry.update(req.body);
        if (services.store.backend !== 'memory') services.settings.markStored();
        return ok(req, policy);
      },
    );
  };
}
