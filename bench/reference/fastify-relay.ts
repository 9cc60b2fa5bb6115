/**
 * The framework floor of the bench's `floor` scenario: relay.ts behind the pipeline every Rota API call
 * passes through (BENCHMARKS.md, "Method"), as in Rota: pino to stdout (batched, redaction on), a UUID
 * request id, Rota's security headers, @fastify/cors, @fastify/rate-limit (generous, in memory), a TypeBox
 * body schema. Not here: SSRF rules, selection, breakers, retries, stats, Prometheus, auth.
 *
 *   node bench/reference/fastify-relay.ts <listen port> <proxy port>[,<proxy port>...]
 */
import { randomUUID } from 'node:crypto';
import cors from '@fastify/cors';
import rateLimit from '@fastify/rate-limit';
import Fastify from 'fastify';
import pino from 'pino';
import { Type } from 'typebox';
import { Pool } from 'undici';
import { SECURITY_HEADERS } from '../../src/http/security-headers.ts';
import { envelope } from './envelope.ts';

const [portArg = '', proxiesArg = ''] = process.argv.slice(2);
const pools = proxiesArg.split(',').map((p) => new Pool(`http://127.0.0.1:${Number(p)}`));
let next = 0;

const logger = pino(
  {
    base: { service: 'fastify-relay' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ['*.password', '*.token', '*.authorization'], censor: '[REDACTED]' },
  },
  pino.destination({ dest: 1, sync: false, minLength: 4096 }),
);

const app = Fastify({
  loggerInstance: logger,
  disableRequestLogging: true,
  genReqId: () => randomUUID(),
});
await app.register(cors, { origin: false, hook: 'onRequest' });
await app.register(rateLimit, { global: true, max: 1_000_000_000, timeWindow: 60_000 });
app.addHook('onRequest', (req, reply, done) => {
  reply.header('x-request-id', req.id);
  reply.headers(SECURITY_HEADERS);
  done();
});
app.addHook('onResponse', (req, reply, done) => {
  req.log.info(
    {
      request_id: req.id,
      method: req.method,
      route: req.routeOptions.url,
      status: reply.statusCode,
      duration_ms: reply.elapsedTime,
    },
    'request',
  );
  done();
});

const Body = Type.Object({ url: Type.String({ minLength: 1, maxLength: 8192 }) });

app.post<{ Body: { url: string } }>('/api/v1/request', { schema: { body: Body } }, async (req, reply) => {
  const { url } = req.body;
  const index = next++ % pools.length;
  const started = performance.now();
  const r = await pools[index]!.request({ path: url, method: 'GET', headers: { host: new URL(url).host } });
  const body = await r.body.text();
  const out = envelope(r, body, index, started, { request_id: req.id, version: 'fastify-relay' });
  return reply.type('application/json; charset=utf-8').send(out);
});

await app.listen({ port: Number(portArg), host: '127.0.0.1' });
