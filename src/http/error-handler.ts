import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import FindMyWay from 'find-my-way';
import { type RotaErrorCode, specOf } from '../errors/codes.ts';
import { RotaError } from '../errors/rota-error.ts';
import { sendError } from './envelope.ts';
import { lingerOnClose } from './linger.ts';
import { codeFor, toDetail } from './validation.ts';

const FRAMEWORK_CODES: Record<string, { code: RotaErrorCode; message: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'PAYLOAD_TOO_LARGE', message: 'Request body is too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    code: 'UNSUPPORTED_MEDIA_TYPE',
    message: 'Unsupported Content-Type; send application/json',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    code: 'MALFORMED_REQUEST',
    message: 'Content-Length does not match the body',
  },
};

function jsonInvalid(req: FastifyRequest, reply: FastifyReply, msg: string) {
  const detail = [{ loc: ['body'], msg, type: 'json_invalid', input: null, ctx: { error: msg } }];
  return sendError(req, reply, 'VALIDATION_ERROR', 'Request body is not valid JSON', detail, detail);
}

function validationFailed(err: FastifyError, req: FastifyRequest, reply: FastifyReply) {
  const detail = toDetail(err.validation ?? [], err.validationContext ?? 'body', req);
  const kind = req.routeOptions.config?.validation;
  if (kind === 'config') {
    return sendError(req, reply, 'INVALID_CONFIGURATION', 'Invalid configuration values', detail, detail);
  }
  if (kind === 'proxy' && detail.some((d) => d.loc[0] === 'body' && d.loc[1] === 'url')) {
    return sendError(req, reply, 'INVALID_PROXY_FORMAT', 'Invalid proxy URL', detail, detail);
  }
  const code = codeFor(detail, kind === 'request');
  return sendError(req, reply, code, 'Request validation failed', detail, detail);
}

/**
 * One place where every failure becomes the error envelope (schemas/common.ts). Unknown errors are logged
 * with their stack and answered with a bare 500: nothing internal reaches the client.
 */
export function registerErrorHandling(app: FastifyInstance): void {
  // Fastify answers 404 for a known path with another method; find it so that we can say 405 instead.
  const known = FindMyWay({ ignoreTrailingSlash: true });
  const methodsByRoute = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    if (route.url.includes('*')) return; // CORS preflight catch-all: every path "has" OPTIONS
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const set = methodsByRoute.get(route.url) ?? new Set<string>();
    for (const m of methods) {
      if (set.has(m)) continue;
      set.add(m);
      known.on(m as 'GET', route.url, () => {});
    }
    methodsByRoute.set(route.url, set);
  });

  // A path with a route of its own (`/proxies/export`) allows that route's methods, although the router
  // would hand another method to a parametric sibling (`DELETE /proxies/:proxy_id`, a 404 for that id).
  const allowedAt = (path: string, method: string): string[] => {
    const own = methodsByRoute.get(path.length > 1 ? path.replace(/\/+$/, '') : path);
    return ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'].filter(
      (m) => m !== method && (own ? own.has(m) : known.find(m as 'GET', path) !== null),
    );
  };
  const unmatched = (req: FastifyRequest, reply: FastifyReply) => {
    const allowed = allowedAt(req.url.split('?')[0] ?? '/', req.method);
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      return sendError(req, reply, 'METHOD_NOT_ALLOWED', `Method ${req.method} is not allowed here`, {
        allowed,
      });
    }
    return sendError(req, reply, 'NOT_FOUND', 'Route not found');
  };
  app.setErrorHandler(errorHandler(unmatched));
  app.setNotFoundHandler(unmatched);
}

type Answer = (req: FastifyRequest, reply: FastifyReply) => FastifyReply;

/**
 * One of Rota's errors. A failure of Rota's own (500, or the store gone: 503) is logged with what was
 * thrown and answered with its code's message, so that nothing internal (a driver's message, a path)
 * reaches the client; every other code's message is written for the client.
 */
function rotaError(err: RotaError, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (err.headers) reply.headers(err.headers);
  const own = err.status >= 500 && (err.status === 500 || err.code === 'STORAGE_UNAVAILABLE');
  if (!own) return sendError(req, reply, err.code, err.message, err.details, err.detail);
  if (err.status === 500) req.log.error({ err }, 'internal error');
  else req.log.warn({ err }, 'storage unavailable');
  return sendError(req, reply, err.code, specOf(err.code).message, err.details, err.detail);
}

/** Every failure to its envelope; `unmatched` answers what is really a missing route (404 or 405). */
function errorHandler(unmatched: Answer) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    // A body refused unread (over its limit, of a type no parser takes): Fastify closes the connection
    // after the answer, which must reach a client that is still sending.
    if (reply.getHeader('connection') === 'close') lingerOnClose(req.raw);
    if (err instanceof RotaError) return rotaError(err, req, reply);
    if (err.validation) return validationFailed(err, req, reply);
    // Fastify refuses a QUERY without Content-Type (RFC 10008) before it looks for a route: an unmatched
    // QUERY gets the 404 or 405 that any other unknown method gets, not a 400.
    if (err.code === 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE' && req.is404) return unmatched(req, reply);
    if (err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return jsonInvalid(req, reply, 'Body is empty');
    const mapped = err.code ? FRAMEWORK_CODES[err.code] : undefined;
    if (mapped) return sendError(req, reply, mapped.code, mapped.message);
    if (err.statusCode === 429) {
      return sendError(req, reply, 'RATE_LIMIT_EXCEEDED', 'Rate limit exceeded', null);
    }
    // Any other refusal of the framework's (a malformed URL, say): the client's request, a 400.
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      req.log.info({ code: err.code, status: err.statusCode }, 'client error');
      return sendError(req, reply, 'MALFORMED_REQUEST', 'Bad request');
    }
    req.log.error({ err }, 'unhandled error');
    return sendError(req, reply, 'INTERNAL_ERROR', 'Internal server error');
  };
}
