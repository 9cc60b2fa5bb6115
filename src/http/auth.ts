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
  }
}

const PUBLIC_EXACT = new Set([
  '/api/v1/health',
  '/api/v1/ready',
  '/openapi.json',
  '/docs',
  '/redoc',
  '/favicon.ico',
]);
const PUBLIC_PREFIX = ['/docs/', '/redoc/'];
const METRICS = /^\/metrics(\/retry|\/circuit-breaker)?$/;

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** The key presented, from X-API-Key or Authorization: Bearer. */
function presented(req: FastifyRequest): string | null {
  const h = req.headers['x-api-key'];
  if (typeof h === 'string' && h !== '') return h;
  const a = req.headers.authorization;
  if (typeof a === 'string') {
    const m = /^Bearer\s+(.+)$/i.exec(a);
    if (m) return m[1]!.trim();
  }
  return null;
}

export function isPublicPath(path: string, publicMetrics: boolean): boolean {
  if (PUBLIC_EXACT.has(path) || PUBLIC_PREFIX.some((p) => path.startsWith(p))) return true;
  return publicMetrics && METRICS.test(path);
}

/**
 * Two hooks around the rate limiter: the first only decides whether the key is valid (so that the
 * limiter can bucket by key for valid keys and by IP for everything else, including wrong keys), the
 * second refuses. Keys are compared as SHA-256 digests with timingSafeEqual: constant time whatever the
 * length or encoding of what the client sent.
 */
export function registerAuthCheck(app: FastifyInstance, config: Config): void {
  const expected = config.apiKey ? digest(config.apiKey) : null;
  app.decorateRequest('apiKeyValid', false);
  app.addHook('onRequest', (req, _reply, done) => {
    const key = expected ? presented(req) : null;
    req.apiKeyValid = key !== null && expected !== null && timingSafeEqual(digest(key), expected);
    done();
  });
}

export function registerAuthGate(app: FastifyInstance, config: Config, audit: AuditLog): void {
  if (!config.requireAuth) return;
  app.addHook('onRequest', (req, reply, done) => {
    const path = (req.url.split('?')[0] ?? '/').replace(/\/+$/, '') || '/';
    if (req.apiKeyValid || req.method === 'OPTIONS' || isPublicPath(path, config.publicMetrics)) {
      done();
      return;
    }
    audit.record({
      action: 'auth.failed',
      request_id: req.id,
      client_ip: req.clientIp,
      method: req.method,
      route: routeOf(req),
      status: 401,
      outcome: 'denied',
    });
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
