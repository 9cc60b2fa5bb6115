import rateLimit, {
  type FastifyRateLimitStore,
  type FastifyRateLimitStoreCtor,
  type RateLimitOptions,
} from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import type { RuntimeSettings } from '../control/settings.ts';
import { RotaError } from '../errors/rota-error.ts';
import { ipBucket } from '../lib/ip-bucket.ts';
import type { Rate } from '../lib/rate.ts';
import type { RateCounter } from '../lib/rate-counter.ts';
import { isPublicRoute } from './auth.ts';
import { routeOf } from './hooks.ts';

export type RouteLimit = 'request' | 'addProxy' | 'config' | 'reset' | 'healthCheck';

/**
 * @fastify/rate-limit's store contract over the one RateCounter of the process (lib/rate-counter.ts),
 * which also holds the failed-auth budget the API shares with the listeners (auth-budget.ts). Each kind
 * of limit (its groupId) counts under its own name; the default limit under `default`.
 */
export function counterStore(counter: RateCounter): FastifyRateLimitStoreCtor {
  class CounterStore implements FastifyRateLimitStore {
    readonly #ns: string;
    constructor(opts: { groupId?: string | undefined }) {
      this.#ns = opts.groupId ?? 'default';
    }
    incr(
      key: string,
      cb: (error: Error | null, result?: { current: number; ttl: number }) => void,
      timeWindow: number,
    ): void {
      const c = counter.incr(`${this.#ns}|${key}`, timeWindow);
      if (!(c instanceof Promise)) {
        cb(null, { current: c.count, ttl: c.ttlMs });
        return;
      }
      c.then(
        (r) => cb(null, { current: r.count, ttl: r.ttlMs }),
        (err: Error) => cb(err),
      );
    }
    child(routeOptions: object): FastifyRateLimitStore {
      return new CounterStore(routeOptions as { groupId?: string });
    }
  }
  return CounterStore as unknown as FastifyRateLimitStoreCtor;
}

/** Bucket: the API key's id (never the key: bucket names can reach logs) when valid, else the client IP. */
export function bucketKey(req: FastifyRequest): string {
  if (req.apiKeyValid && req.apiKeyId) return `key:${req.apiKeyId}`;
  return `ip:${ipBucket(req.clientIp)}`;
}

export interface RateLimitDeps {
  config: Config;
  settings: RuntimeSettings;
  onRejected: (endpoint: string) => void;
  /** Where the counts live (shared with the listeners). */
  counter: RateCounter;
}

/**
 * The default limit for a valid key. When ROTA_API_KEY_RATE_LIMIT is not set, config.ts hands back the
 * very same object as ROTA_RATE_LIMIT ("same as rate limit"), and the key then follows `PUT config`
 * changes of the default too.
 */
function keyRate(config: Config, settings: RuntimeSettings): Rate {
  return config.apiKeyRateLimit === config.rateLimit ? settings.defaultRate() : config.apiKeyRateLimit;
}

type LimitHandler = (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/**
 * Every request is counted in one app-level onRequest hook, registered between the auth check (which
 * decides key or IP bucket) and the auth gate (which refuses). The plugin's own hooks would be route-level
 * and run after every app-level hook: a request refused by the gate, and every 404, would never be
 * counted, and a client could guess keys or probe paths without limit.
 */
export async function registerRateLimit(app: FastifyInstance, d: RateLimitDeps): Promise<void> {
  const { config, settings } = d;
  await app.register(rateLimit, {
    // Applied below, once per request; routes with their own limit are handled there too.
    global: false,
    hook: 'onRequest',
    store: counterStore(d.counter),
    keyGenerator: bucketKey,
    max: (req) => (req.apiKeyValid ? keyRate(config, settings) : settings.defaultRate()).limit,
    timeWindow: (req) => (req.apiKeyValid ? keyRate(config, settings) : settings.defaultRate()).windowMs,
    enableDraftSpec: true,
    onExceeded: (req) => d.onRejected(routeOf(req)),
    errorResponseBuilder: (_req, ctx) =>
      new RotaError('RATE_LIMIT_EXCEEDED', `Rate limit exceeded: retry in ${Math.ceil(ctx.ttl / 1000)} s`, {
        details: { limit: ctx.max, retry_after_s: Math.ceil(ctx.ttl / 1000) },
      }),
  });
  const fallback: LimitHandler = app.rateLimit();
  // One handler (and so one set of counters) per kind of limit: /proxies/test shares health-check's.
  const perKind = new Map<string, LimitHandler>();
  const handlerFor = (opts: RateLimitOptions): LimitHandler => {
    const id = opts.groupId ?? 'route';
    let h = perKind.get(id);
    if (!h) {
      h = app.rateLimit(opts);
      perKind.set(id, h);
    }
    return h;
  };
  // /metrics is never limited for whoever may read it (scrapers must not be refused); a caller the
  // auth gate will refuse is counted like anywhere else, or /metrics would be a free key-guessing oracle.
  const exempt = (req: FastifyRequest): boolean =>
    !config.requireAuth || req.apiKeyValid || isPublicRoute(req.routeOptions.url, config.publicMetrics);
  app.addHook('onRequest', async function limit(req, reply) {
    const own = req.routeOptions.config?.rateLimit;
    if (own === false && exempt(req)) return;
    await (own ? handlerFor(own) : fallback).call(this, req, reply);
  });
}

/** The limit of a kind as it stands now (`PUT config` changes the request limit at once). */
export function limitOf(kind: RouteLimit, config: Config, settings: RuntimeSettings): Rate {
  if (kind !== 'request') return config.routeRateLimits[kind];
  const { windowMs } = config.routeRateLimits.request;
  return { limit: settings.get().rate_limits.request_endpoint_limit, windowMs };
}

/**
 * Counts one call of `kind` for `req`'s bucket in the counter the REST route of that kind counts in, for
 * a call that reaches the same service another way (a tool of /mcp): both share one limit.
 * @fastify/rate-limit keys a route's count `<groupId>|<bucket><groupId>` (the store's namespace, then the
 * key with the group appended); test/mcp.test.ts holds the two to one count. Null within the limit, else
 * the limit and when to retry.
 */
export async function chargeLimit(
  kind: RouteLimit,
  req: FastifyRequest,
  d: Pick<RateLimitDeps, 'config' | 'settings' | 'counter'>,
): Promise<{ limit: number; retryAfterS: number } | null> {
  const rate = limitOf(kind, d.config, d.settings);
  const c = await d.counter.incr(`${kind}|${bucketKey(req)}${kind}`, rate.windowMs);
  return c.count <= rate.limit ? null : { limit: rate.limit, retryAfterS: Math.ceil(c.ttlMs / 1000) };
}

/** Route-level options for a route with its own limit (ROTA_RATE_LIMIT_REQUEST, ..._ADD_PROXY, ...). */
export function routeLimit(kind: RouteLimit, config: Config, settings: RuntimeSettings): RateLimitOptions {
  const fixed: Record<Exclude<RouteLimit, 'request'>, Rate> = {
    addProxy: config.routeRateLimits.addProxy,
    config: config.routeRateLimits.config,
    reset: config.routeRateLimits.reset,
    healthCheck: config.routeRateLimits.healthCheck,
  };
  if (kind === 'request') {
    // Read per request: `PUT config` rate_limits.request_endpoint_limit applies at once.
    return {
      groupId: kind,
      max: () => settings.get().rate_limits.request_endpoint_limit,
      timeWindow: config.routeRateLimits.request.windowMs,
    };
  }
  return { groupId: kind, max: fixed[kind].limit, timeWindow: fixed[kind].windowMs };
}
