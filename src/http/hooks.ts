import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuditLog, AuditOutcome } from '../audit/audit.ts';
import type { PromMetrics } from '../metrics/prometheus.ts';
import type { ClientIpResolver } from './client-ip.ts';
import { sendError } from './envelope.ts';
import { lingerOnClose } from './linger.ts';
import { SECURITY_HEADERS } from './security-headers.ts';

const PRINTABLE_ID = /^[\x20-\x7e]{1,128}$/;

/** Reuse the client's X-Request-ID when it is 1-128 printable ASCII characters. */
export function genReqId(req: { headers: Record<string, string | string[] | undefined> }): string {
  const v = req.headers['x-request-id'];
  return typeof v === 'string' && PRINTABLE_ID.test(v) ? v : randomUUID();
}

declare module 'fastify' {
  interface FastifyRequest {
    clientIp: string;
  }
  interface FastifyContextConfig {
    /** Which error code a schema failure on this route gets (docs/decisions.md, "Errors"). */
    validation?: 'request' | 'proxy' | 'config';
    /** Name of the action in the audit log; routes without one are not audited. */
    audit?: string;
  }
}

function outcomeOf(status: number): AuditOutcome {
  if (status < 400) return 'success';
  return status === 429 ? 'rate_limited' : 'failure';
}

export function routeOf(req: FastifyRequest): string {
  return req.routeOptions.url ?? 'unmatched';
}

/**
 * Fastify answers a path it cannot decode, or a path parameter over `maxParamLength`, before any hook runs,
 * with its own body. Passed as Fastify's `frameworkErrors` option, this gives those the envelope, the
 * request id, the security headers and a request log line like every other error.
 */
export function frameworkErrorHandler(clientIp: ClientIpResolver) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply): void => {
    req.clientIp = clientIp.resolve(req.raw.socket?.remoteAddress, req.headers);
    reply.header('x-request-id', req.id);
    reply.headers(SECURITY_HEADERS);
    const tooLong = err.code === 'FST_ERR_MAX_PARAM_LENGTH';
    const detail = [
      {
        loc: ['path'],
        msg: tooLong ? 'A path parameter is too long' : 'The path is not valid percent-encoded UTF-8',
        type: tooLong ? 'string_too_long' : 'value_error',
        input: null,
        ctx: {},
      },
    ];
    sendError(req, reply, 'VALIDATION_ERROR', detail[0]!.msg, detail, detail);
    req.log.info(
      { method: req.method, route: 'unmatched', client_ip: req.clientIp, status: reply.statusCode },
      'request',
    );
  };
}

export function registerHooks(
  app: FastifyInstance,
  clientIp: ClientIpResolver,
  audit: AuditLog,
  prom: PromMetrics,
): void {
  app.decorateRequest('clientIp', '');
  // The request line carries only fixed fields (method, route template, client address, status, timing),
  // never a secret, so it skips the wildcard redaction that the logger would otherwise walk on every call
  // (a measurable share of per-request CPU). Every other line keeps the logger's full redaction.
  const requestLog = app.log.child({}, { redact: { paths: [] } });

  app.addHook('onRequest', (req, reply, done) => {
    req.clientIp = clientIp.resolve(req.socket.remoteAddress, req.headers);
    reply.header('x-request-id', req.id);
    reply.headers(SECURITY_HEADERS);
    // Node's parser takes a request line without a version as HTTP/0.9, and `HTTP/2.0` as is: refused
    // before any route runs, so nothing such a request asks for is done or sent on.
    if (req.raw.httpVersionMajor !== 1 || req.raw.httpVersionMinor > 1) {
      reply.header('connection', 'close');
      lingerOnClose(req.raw);
      sendError(req, reply, 'HTTP_VERSION_NOT_SUPPORTED', 'HTTP version not supported; send HTTP/1.1');
      return;
    }
    done();
  });

  app.addHook('onResponse', (req, reply, done) => {
    prom.observeHttp(req.routeOptions.url, req.method, reply.statusCode, reply.elapsedTime / 1000);
    requestLog.info(
      {
        request_id: req.id,
        method: req.method,
        route: routeOf(req),
        client_ip: req.clientIp,
        status: reply.statusCode,
        duration_ms: Math.round(reply.elapsedTime * 1000) / 1000,
      },
      'request',
    );
    const action = req.routeOptions.config?.audit;
    // A refused key already has its own audit line (auth.failed): one line per event, never two.
    if (action && audit.enabled && !req.authRefused) {
      audit.record({
        action,
        request_id: req.id,
        client_ip: req.clientIp,
        method: req.method,
        route: routeOf(req),
        status: reply.statusCode,
        outcome: outcomeOf(reply.statusCode),
        body: req.body,
        params: req.params,
      });
    }
    done();
  });
}
