import { createHash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import type { RuntimeSettings } from '../control/settings.ts';
import type { Rate } from '../lib/rate.ts';
import { ApiError } from './errors.ts';
import { routeOf } from './hooks.ts';

export type RouteLimit = 'request' | 'addProxy' | 'config' | 'reset' | 'healthCheck';

/** Bucket: the API key (hashed: a key is a secret, and bucket names can reach logs) when valid, else the client IP. */
export function bucketKey(req: FastifyRequest): string {
  if (req.apiKeyValid) {
    const k = (req.headers['x-api-key'] as string | undefined) ?? String(req.headers.authorization);
    return `key:${createHash('sha256').update(k).digest('hex').slice(0, 32)}`;
  }
  return `ip:${req.clientIp}`;
}

export interface RateLimitDeps {
  config: Config;
  settings: RuntimeSettings;
  onRejected: (endpoint: string) => void;
}

/**
 * The default limit applies to every route; some routes have their own (spec section 8). Limits are read
 * per request so that `PUT config` rate_limits apply at once. The store is @fastify/rate-limit's; it takes
 * a Redis store for several instances (`redis` option) without changes here.
 */
export async function registerRateLimit(app: FastifyInstance, d: RateLimitDeps): Promise<void> {
  const { config, settings } = d;
  await app.register(rateLimit, {
    global: true,
    hook: 'onRequest',
    keyGenerator: bucketKey,
    max: (req) => (req.apiKeyValid ? config.apiKeyRateLimit.limit : settings.get().rate_limits.default_limit),
    timeWindow: config.rateLimit.windowMs,
    enableDraftSpec: true,
    onExceeded: (req) => d.onRejected(routeOf(req)),
    errorResponseBuilder: (_req, ctx) =>
      new ApiError('RATE_LIMIT_EXCEEDED', `Rate limit exceeded: retry in ${Math.ceil(ctx.ttl / 1000)} s`, {
        details: { limit: ctx.max, retry_after_s: Math.ceil(ctx.ttl / 1000) },
      }),
  });
}

/** Route-level options for a route with its own limit. */
export function routeLimit(kind: RouteLimit, config: Config, settings: RuntimeSettings) {
  const fixed: Record<Exclude<RouteLimit, 'request'>, Rate> = {
    addProxy: config.routeRateLimits.addProxy,
    config: config.routeRateLimits.config,
    reset: config.routeRateLimits.reset,
    healthCheck: config.routeRateLimits.healthCheck,
  };
  if (kind === 'request') {
    return {
      max: () => settings.get().rate_limits.request_endpoint_limit,
      timeWindow: config.routeRateLimits.request.windowMs,
    };
  }
  return { max: fixed[kind].limit, timeWindow: fixed[kind].windowMs };
}
