import type { FastifyPluginAsync } from 'fastify';
import { type Static, Type } from 'typebox';
import { fieldError } from '../../errors/rota-error.ts';
import { responseGone } from '../../lib/abort.ts';
import { bufferedCall, parseTarget } from '../../outbound/buffered-call.ts';
import { rotatePick } from '../../outbound/rotate.ts';
import { proxyView } from '../../pool/view.ts';
import { Envelope, errorResponses, Nullable, POOL_EMPTY } from '../../schemas/common.ts';
import { ProxySchema } from '../../schemas/proxy.ts';
import {
  ProxiedRequestBody,
  type ProxiedRequestBodyT,
  ProxiedResponse,
  RotateQuery,
  TARGET_REFUSED,
} from '../../schemas/request.ts';
import type { Services } from '../../services.ts';
import { ok } from '../envelope.ts';
import { sendProxied } from '../proxied-answer.ts';
import { routeLimit } from '../rate-limit.ts';

/** A proxy as the pool lists it, and the policy rule the pick applied. */
const RotateAnswer = Type.Object({
  ...ProxySchema.properties,
  policy: Nullable(Type.String({ description: 'The policy rule a call to `host` (`path`, `method`) gets' })),
});

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Outside an RFC 9110 field value (patterns.ts HEADER_VALUE_PATTERN). */
const BAD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

function checkHeaders(headers: Record<string, string>): void {
  for (const [name, value] of Object.entries(headers)) {
    if (!TOKEN.test(name) || BAD_VALUE.test(value)) {
      throw fieldError('VALIDATION_ERROR', 'Invalid header', {
        loc: ['body', 'headers', name.slice(0, 64)],
        msg: 'Header names must be tokens; values may hold tab, space, visible ASCII and 0x80-0xFF only',
        type: 'value_error',
        input: null,
        ctx: {},
      });
    }
  }
}

function decodeBody(b: ProxiedRequestBodyT): Buffer | null {
  if (b.body === null || b.body === undefined) return null;
  if (b.body_encoding !== 'base64') return Buffer.from(b.body, 'utf8');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b.body) || b.body.length % 4 !== 0) {
    throw fieldError('VALIDATION_ERROR', 'Body is not valid base64', {
      loc: ['body', 'body'],
      msg: 'Input should be valid base64',
      type: 'value_error',
      input: null,
      ctx: {},
    });
  }
  return Buffer.from(b.body, 'base64');
}

export function requestRoutes(services: Services): FastifyPluginAsync {
  const { executor, selector, prelude, dispatchers } = services;
  const call = { prelude, executor, dispatchers, maxResponseBytes: services.config.maxResponseBytes };
  return async (app) => {
    app.post<{ Body: ProxiedRequestBodyT }>(
      '/request',
      {
        config: {
          validation: 'request',
          rateLimit: routeLimit('request', services.config, services.settings),
        },
        schema: {
          tags: ['requests'],
          summary: 'Send an HTTP request through a proxy from the pool',
          description:
            'Rotates, fails over to a different proxy on proxy faults, and never follows redirects.',
          body: ProxiedRequestBody,
          response: {
            200: Envelope(ProxiedResponse),
            ...errorResponses(TARGET_REFUSED, 413, 415, 422, 502, POOL_EMPTY, 504),
          },
        },
      },
      async (req, reply) => {
        const b = req.body;
        const url = parseTarget(b.url, ['body', 'url']);
        checkHeaders(b.headers);
        const a = await bufferedCall(call, {
          url,
          method: b.method,
          headers: b.headers,
          body: decodeBody(b),
          timeoutS: b.timeout,
          sessionId: b.session_id,
          country: b.country?.toUpperCase(),
          signal: responseGone(reply.raw),
        });
        return sendProxied(req, reply, a.fields, a.body);
      },
    );

    app.get<{ Querystring: Static<typeof RotateQuery> }>(
      '/rotate',
      {
        schema: {
          tags: ['requests'],
          summary: 'Select the next proxy without sending a request',
          description: 'Advances the strategy like a real selection; touches no breaker and no counter.',
          querystring: RotateQuery,
          response: { 200: Envelope(RotateAnswer), ...errorResponses(422, POOL_EMPTY) },
        },
      },
      async (req) => {
        const deps = { prelude, selector, breakers: services.breakers, now: services.clock.now };
        const { entry, policy } = rotatePick(deps, req.query);
        return ok(req, { ...proxyView(services.pool, entry), policy });
      },
    );
  };
}
