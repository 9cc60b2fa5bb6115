import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuditLog } from '../audit/audit.ts';
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
 * Public route templates (DECISIONS "Auth and rate limits"). Matched against the route the router chose,
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

/**
 * Two hooks around the rate limiter: the first only decides whether the key is valid (so that the
 * limiter can bucket by key for valid keys and by IP for everything else, including wrong keys), the
 * second refuses. Keys are compared as SHA-256 digests with timingSafeEqual: constant time whatever the
 * length or encoding of what the client sent.
 */
export function registerAuthCheck(app: FastifyInstance, config: Config): void {
  const expected = config.apiKey ? digest(Buffer.from(config.apiKey, 'utf8')) : null;
  const keyId = expected ? createHash('sha256').update(expected).digest('hex').slice(0, 16) : null;
  app.decorateRequest('apiKeyValid', false);
  app.decorateRequest('apiKeyId', null);
  app.decorateRequest('authRefused', false);
  // Without a configured key no request can carry a valid one: the decorated defaults are the answer.
  if (expected === null) return;
  app.addHook('onRequest', (req, _reply, done) => {
    const key = presented(req);
    req.apiKeyValid = key !== null && timingSafeEqual(digest(wireBytes(key)), expected);
    req.apiKeyId = req.apiKeyValid ? keyId : null;
    done();
  });
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
    sendError(
      req,
      reply,
      401,
      'UNAUTHORIZED',
      'A valid API key is required (X-API-Key or Authorization: Bearer)',
    );
  });
}
