import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuditLog } from '../audit/audit.ts';
import type { AuthFailureBudget, BudgetVerdict } from '../auth/budget.ts';
import type { Config } from '../config.ts';
import { sendError } from './envelope.ts';
import { routeOf } from './hooks.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** True when the request carried the configured API key. */
    apiKeyValid: boolean;
    /** A short digest naming the valid key (rate-limit bucket); null without a valid key. */
    apiKeyId: string | null;
    /** Set when the auth gate refused the request (its audit line is already written). */
    authRefused: boolean;
  }
}

/**
 * Public route templates. Matched against the route the router chose,
 * never the raw path: however a path is spelled (encoding, slashes, aliases), it is public only when it
 * reached a public handler.
 */
const PUBLIC_ROUTES = new Set([
  '/api/v1/health',
  '/api/v1/ready',
  '/openapi.json',
  '/docs',
  '/redoc',
  '/favicon.ico',
  // The dashboard page asks for the key itself; its data comes from /api/v1/dashboard/* with the key.
  '/dashboard',
  '/dashboard/dashboard.js',
  '/dashboard/dashboard.css',
]);
const PUBLIC_ROUTE_PREFIX = ['/docs/', '/redoc/'];
const METRICS_ROUTES = new Set(['/metrics', '/metrics/retry', '/metrics/circuit-breaker']);

const BEYOND_LATIN1 = /[\u{100}-\u{10ffff}]/u;

/**
 * The bytes the client sent. Node decodes header values as latin1, so re-encoding as latin1 gives back the
 * wire bytes, and a UTF-8 key configured in the environment matches the same UTF-8 bytes on the wire.
 */
function wireBytes(value: string): Buffer {
  return Buffer.from(value, BEYOND_LATIN1.test(value) ? 'utf8' : 'latin1');
}

function digest(value: Buffer): Buffer {
  return createHash('sha256').update(value).digest();
}

/** The key presented, from X-API-Key or Authorization: Bearer. */
function presented(req: FastifyRequest): string | null {
  const h = req.headers['x-api-key'];
  if (typeof h === 'string' && h !== '') return h;
  const a = req.headers.authorization;
  if (typeof a === 'string') {
    const m = /^Bearer[ \t]+/i.exec(a);
    const key = m ? a.slice(m[0].length).trim() : '';
    if (key !== '') return key;
  }
  return null;
}

/** True when the route the request was routed to is served without a key. */
export function isPublicRoute(route: string | undefined, publicMetrics: boolean): boolean {
  if (route === undefined) return false;
  if (PUBLIC_ROUTES.has(route) || PUBLIC_ROUTE_PREFIX.some((p) => route.startsWith(p))) return true;
  return publicMetrics && METRICS_ROUTES.has(route);
}

export interface AuthCheckDeps {
  readonly config: Config;
  /** The client IP's failed-auth budget, shared with the listeners (auth-budget.ts). */
  readonly budget: AuthFailureBudget;
  /** Told of each request refused because the budget is spent, by route (the rate-limited metric). */
  readonly onLimited: (route: string) => void;
}

/**
 * Two hooks around the rate limiter: the first decides whether the key is valid (so that the limiter can
 * bucket by key for valid keys and by IP for everything else, including wrong keys), the second refuses.
 * Keys are compared as SHA-256 digests with timingSafeEqual: constant time whatever the length or
 * encoding of what the client sent.
 *
 * With auth on, every presented key, on any route, is charged to the client IP's failed-auth budget
 * before the limiter runs: once the budget is spent the request is refused with 429 whatever its key, so
 * neither the answer nor the limiter's headers (a key bucket or an IP bucket) tell a right key from a
 * wrong one. No key at all is not charged (it cannot be right); on a protected route it is a 401, counted
 * by the per-IP rate limits.
 */
export function registerAuthCheck(app: FastifyInstance, d: AuthCheckDeps): void {
  const { config } = d;
  const expected = config.apiKey ? digest(Buffer.from(config.apiKey, 'utf8')) : null;
  const keyId = expected ? createHash('sha256').update(expected).digest('hex').slice(0, 16) : null;
  app.decorateRequest('apiKeyValid', false);
  app.decorateRequest('apiKeyId', null);
  app.decorateRequest('authRefused', false);
  // Without a configured key no request can carry a valid one: the decorated defaults are the answer.
  if (expected === null) return;
  const admit = (req: FastifyRequest, valid: boolean): void => {
    req.apiKeyValid = valid;
    req.apiKeyId = valid ? keyId : null;
  };
  app.addHook('onRequest', (req, reply, done) => {
    const key = presented(req);
    const valid = key !== null && timingSafeEqual(digest(wireBytes(key)), expected);
    if (!config.requireAuth || key === null) {
      admit(req, valid);
      done();
      return;
    }
    const settle = (b: BudgetVerdict): void => {
      if (b.type === 'limited') {
        refuseLimited(req, reply, d, b.retryAfterS);
        return;
      }
      admit(req, valid);
      done();
    };
    const charged = d.budget.charge(req.clientIp, !valid);
    if (charged instanceof Promise) charged.then(settle, done);
    else settle(charged);
  });
}

/** 429 without a word about the key; the hooks after this one (limiter, gate, handler) do not run. */
function refuseLimited(
  req: FastifyRequest,
  reply: FastifyReply,
  d: AuthCheckDeps,
  retryAfterS: number,
): void {
  d.onLimited(routeOf(req));
  reply.header('retry-after', String(retryAfterS));
  sendError(
    req,
    reply,
    'RATE_LIMIT_EXCEEDED',
    `Too many failed authentication attempts: retry in ${retryAfterS} s`,
    { limit: d.budget.limit, retry_after_s: retryAfterS },
  );
}

export function registerAuthGate(app: FastifyInstance, config: Config, audit: AuditLog): void {
  if (!config.requireAuth) return;
  app.addHook('onRequest', (req, reply, done) => {
    // OPTIONS: a CORS preflight cannot carry the key; it reaches no handler but the CORS one.
    if (
      req.apiKeyValid ||
      req.method === 'OPTIONS' ||
      isPublicRoute(req.routeOptions.url, config.publicMetrics)
    ) {
      done();
      return;
    }
    req.authRefused = true;
    audit.record({
      action: 'auth.failed',
      request_id: req.id,
      client_ip: req.clientIp,
      method: req.method,
      route: routeOf(req),
      status: 401,
      outcome: 'denied',
    });
    // One answer for a missing and a wrong key: nothing tells a guesser how close it came.
    reply.header('www-authenticate', 'ApiKey');
    sendError(req, reply, 'UNAUTHORIZED', 'A valid API key is required (X-API-Key or Authorization: Bearer)');
  });
}
