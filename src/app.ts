import cors from '@fastify/cors';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { AuthFailureBudget } from './auth/budget.ts';
import type { Config } from './config.ts';
import { registerAuthCheck, registerAuthGate } from './http/auth.ts';
import { clientErrorHandler, tooManyConnectionsResponse } from './http/client-error.ts';
import { registerDocs } from './http/docs.ts';
import { registerErrorHandling } from './http/error-handler.ts';
import { frameworkErrorHandler, genReqId, registerHooks } from './http/hooks.ts';
import { registerJsonParser } from './http/json-parser.ts';
import { lazyChildLogger } from './http/lazy-logger.ts';
import { LazySchemas } from './http/lazy-schemas.ts';
import { registerOriginGuard } from './http/origin-guard.ts';
import { registerRateLimit } from './http/rate-limit.ts';
import { banRoutes } from './http/routes/bans.ts';
import { breakerRoutes } from './http/routes/breakers.ts';
import { configRoutes } from './http/routes/config.ts';
import { dashboardRoutes } from './http/routes/dashboard.ts';
import { healthCheckRoutes } from './http/routes/health-check.ts';
import { hostRoutes } from './http/routes/hosts.ts';
import { importRoutes } from './http/routes/import.ts';
import { inspectionRoutes } from './http/routes/inspection.ts';
import { mcpRoutes } from './http/routes/mcp.ts';
import { apiMetricsRoutes, rootMetricsRoutes } from './http/routes/metrics.ts';
import { monitoringRoutes } from './http/routes/monitoring.ts';
import { policyRoutes } from './http/routes/policies.ts';
import { proxyRoutes } from './http/routes/proxies.ts';
import { requestRoutes } from './http/routes/request.ts';
import { requestLogRoutes } from './http/routes/requests.ts';
import { sourceRoutes } from './http/routes/sources.ts';
import { registerValidators } from './http/validator.ts';
import type { Services } from './services.ts';

export const API_PREFIX = '/api/v1';

/**
 * `/api/...` is an alias of `/api/v1/...`, and `/api/metrics`, `/api/v1/metrics` of `/metrics`. Rewriting
 * before routing keeps one route per resource, one OpenAPI entry and one metrics label.
 */
export function rewriteUrl(url: string): string {
  if (!url.startsWith('/api')) return url;
  const m = /^\/api(?:\/v1)?(\/metrics(?:\?.*)?)$/.exec(url);
  if (m) return m[1]!;
  if (url === '/api' || url.startsWith('/api/') || url.startsWith('/api?')) {
    if (url.startsWith('/api/v1/') || url === '/api/v1' || url.startsWith('/api/v1?')) return url;
    return `/api/v1${url.slice(4)}`;
  }
  return url;
}

/** Builds the HTTP app over ready services. No I/O here beyond what Fastify itself does. */
export async function buildApp(services: Services, config: Config): Promise<FastifyInstance> {
  const lazy = new LazySchemas();
  const app: FastifyInstance = Fastify({
    // Validators and serializers are compiled on each route's first use, not at boot (lazy-schemas.ts).
    schemaController: lazy.schemaController(),
    loggerInstance: services.logger as FastifyBaseLogger,
    // Our own onResponse hook writes one line per request (hooks.ts); Fastify's two would double it.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    genReqId,
    // A stand-in that builds the request's child logger only if a line is written through it
    // (lazy-logger.ts): most requests never do, and pino's child() is not free.
    childLoggerFactory: lazyChildLogger,
    bodyLimit: config.maxBodyBytes,
    rewriteUrl: (req) => rewriteUrl(req.url ?? '/'),
    // Slow clients must not hold sockets forever (slowloris): the whole request must arrive in time.
    requestTimeout: 30_000,
    connectionTimeout: 0,
    keepAliveTimeout: 72_000,
    // A parameter up to a 256-character session id with every character escaped (DELETE sessions/{id}).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 800 },
    trustProxy: false,
    // Slowloris: a request head must arrive within 10 s, checked every second (Node checks every 30 s).
    http: { headersTimeout: 10_000, connectionsCheckingInterval: 1_000 },
    // Paths Fastify rejects before any hook (bad percent-encoding, a parameter over maxParamLength) get
    // the envelope, the request id and the security headers too.
    frameworkErrors: frameworkErrorHandler(services.clientIp),
    // Requests Node's parser refuses (oversized headers, garbage, a head that never completes).
    clientErrorHandler: clientErrorHandler(services.logger as FastifyBaseLogger),
  });

  // Connections past ROTA_MAX_CONNECTIONS(_PER_IP) get 503 TOO_MANY_CONNECTIONS before Node parses them.
  services.connections.guard.guard(app.server, { door: 'api', answer: tooManyConnectionsResponse });
  registerErrorHandling(app);
  lazy.attach(app);
  registerValidators(app, lazy);
  registerJsonParser(app, config.maxBodyBytes);
  registerHooks(app, services.clientIp, services.audit, services.prom);
  // Before CORS, the rate limiter, auth, body parsing and every handler: a foreign Host or a write from
  // another web origin changes nothing and costs no quota.
  registerOriginGuard(app, {
    allowedHosts: config.allowedHosts,
    corsOrigins: () => services.settings.get().cors_origins,
  });
  // CORS first, so that every answer after it (401, 429 included) carries the CORS headers.
  await app.register(cors, {
    origin: (origin, cb) => {
      const allowed = services.settings.get().cors_origins;
      if (!origin) return cb(null, false);
      cb(null, allowed.includes('*') ? true : allowed.includes(origin));
    },
    credentials: config.corsAllowCredentials,
    methods: ['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'],
    exposedHeaders: [
      'X-Request-ID',
      'Retry-After',
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
    ],
    hook: 'onRequest',
  });

  // Order matters: know whether the key is valid (within the IP's failed-auth budget), then count (by key
  // or by IP), then refuse.
  registerAuthCheck(app, {
    config,
    budget: new AuthFailureBudget(services.rateCounter, config.authFailureLimit),
    onLimited: (route) => services.prom.rateLimited(route),
  });
  await registerRateLimit(app, {
    config,
    settings: services.settings,
    onRejected: (ep) => services.prom.rateLimited(ep),
    counter: services.rateCounter,
  });
  registerAuthGate(app, config, services.audit);

  await registerDocs(app, { requireAuth: config.requireAuth });

  await app.register(
    async (api) => {
      await api.register(proxyRoutes(services));
      await api.register(importRoutes(services));
      await api.register(sourceRoutes(services));
      await api.register(healthCheckRoutes(services));
      await api.register(monitoringRoutes(services, () => services.selector.lastRotation));
      await api.register(requestRoutes(services));
      await api.register(requestLogRoutes(services));
      await api.register(hostRoutes(services));
      await api.register(configRoutes(services, services.retry));
      await api.register(breakerRoutes(services));
      await api.register(banRoutes(services));
      await api.register(policyRoutes(services));
      await api.register(
        inspectionRoutes(services, {
          settings: services.inspectionSettings,
          authority: services.inspection.authority,
        }),
      );
      await api.register(apiMetricsRoutes(services));
    },
    { prefix: API_PREFIX },
  );
  await app.register(rootMetricsRoutes(services));
  if (config.mcp) await app.register(mcpRoutes(services));
  await app.register(dashboardRoutes(services));

  return app;
}
