import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuditLog } from '../audit/audit.ts';
import type { PromMetrics } from '../metrics/prometheus.ts';
import type { ClientIpResolver } from './client-ip.ts';
import { SECURITY_HEADERS } from './security-headers.ts';

const PRINTABLE_ID = /^[\x21-\x7e]{1,128}$/;

/** DECISIONS: reuse the client's X-Request-ID when it is 1-128 printable ASCII characters. */
export function genReqId(req: { headers: Record<string, string | string[] | undefined> }): string {
  const v = req.headers['x-request-id'];
  return typeof v === 'string' && PRINTABLE_ID.test(v) ? v : randomUUID();
}

declare module 'fastify' {
  interface FastifyRequest {
    clientIp: string;
  }
  interface FastifyContextConfig {
    /** Which error code a schema failure on this route gets (DECISIONS). */
    validation?: 'request' | 'proxy' | 'config';
    /** Name of the action in the audit log; routes without one are not audited. */
    audit?: string;
  }
}

export function routeOf(req: FastifyRequest): string {
  return req.routeOptions.url ?? 'unmatched';
}

export function registerHooks(
  app: FastifyInstance,
  clientIp: ClientIpResolver,
  audit: AuditLog,
  prom: PromMetrics,
): void {
  app.decorateRequest('clientIp', '');

  app.addHook('onRequest', (req, reply, done) => {
    req.clientIp = clientIp.resolve(req.socket.remoteAddress, req.headers);
    reply.header('x-request-id', req.id);
    reply.headers(SECURITY_HEADERS);
    done();
  });

  app.addHook('onResponse', (req, reply, done) => {
    prom.observeHttp(req.routeOptions.url, req.method, reply.statusCode, reply.elapsedTime / 1000);
    req.log.info(
      {
        method: req.method,
        route: routeOf(req),
        client_ip: req.clientIp,
        status: reply.statusCode,
        duration_ms: Math.round(reply.elapsedTime * 1000) / 1000,
      },
      'request',
    );
    const action = req.routeOptions.config?.audit;
    if (action && audit.enabled) {
      audit.record({
        action,
        request_id: req.id,
        client_ip: req.clientIp,
        method: req.method,
        route: routeOf(req),
        status: reply.statusCode,
        outcome: reply.statusCode < 400 ? 'success' : 'failure',
        body: req.body,
        params: req.params,
      });
    }
    done();
  });
}
