import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { RotaError } from '../../errors/rota-error.ts';
import { responseGone } from '../../lib/abort.ts';
import type { LocalCaller, ToolLimit } from '../../mcp/local.ts';
import type { Services } from '../../services.ts';
import { chargeLimit } from '../rate-limit.ts';

/**
 * /mcp: Rota's MCP server on the API port (Streamable HTTP, stateless, JSON answers; mcp/http.ts). It is
 * an API route like any other: the origin guard, the key (a 401 without it when ROTA_REQUIRE_AUTH is on),
 * the rate limits and the body limit apply before it runs. Each tool call is counted again under its REST
 * route's own limit (fetch: request, add_proxy: add-proxy, check_proxies: health-check, a ban report:
 * config), in that route's very counter, and its writes are audited as that route's. Tools that change
 * the pool need the key whenever Rota has one, even with auth not required.
 *
 * The MCP SDK is loaded on the first request to /mcp, not at start-up (start-up time and idle memory).
 */

type McpHttp = typeof import('../../mcp/http.ts');
let loading: Promise<McpHttp> | undefined;
const load = (): Promise<McpHttp> => {
  loading ??= import('../../mcp/http.ts');
  return loading;
};

/** The headers the MCP transport reads. */
const PASSED = ['accept', 'content-type', 'mcp-protocol-version'];
/** Headers of the transport's answer that are Fastify's to write. */
const OWN = new Set(['content-length', 'transfer-encoding', 'connection']);

function headersOf(req: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of PASSED) {
    const v = req.headers[name];
    if (v !== undefined) out[name] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

function callerOf(services: Services, req: FastifyRequest, reply: FastifyReply): LocalCaller {
  const { config, settings, rateCounter: counter, audit, prom } = services;
  return {
    async charge(limit: ToolLimit) {
      const over = await chargeLimit(limit, req, { config, settings, counter });
      if (over === null) return;
      prom.rateLimited('/mcp');
      throw new RotaError('RATE_LIMIT_EXCEEDED', `Rate limit exceeded: retry in ${over.retryAfterS} s`, {
        details: { limit: over.limit, retry_after_s: over.retryAfterS },
      });
    },
    audit(action, status, input) {
      if (!audit.enabled) return;
      const outcome = status < 400 ? 'success' : status === 429 ? 'rate_limited' : 'failure';
      const { id, clientIp } = req;
      audit.record({
        action,
        request_id: id,
        client_ip: clientIp,
        method: 'POST',
        route: '/mcp',
        status,
        outcome,
        ...input,
      });
    },
    signal: responseGone(reply.raw),
  };
}

/** JSON-RPC's Invalid Request, as the MCP SDK answers what it does not take. */
const BATCH_REFUSED = {
  jsonrpc: '2.0',
  id: null,
  error: {
    code: -32600,
    message: 'JSON-RPC batches are not accepted: send one message per POST (MCP 2025-06-18 has no batches)',
  },
};

function notHere(): RotaError {
  return new RotaError('METHOD_NOT_ALLOWED', 'MCP here is stateless: POST each JSON-RPC message to /mcp', {
    details: { allowed: ['POST'] },
    headers: { allow: 'POST' },
  });
}

export function mcpRoutes(services: Services): FastifyPluginAsync {
  return async (app) => {
    app.post('/mcp', { schema: { hide: true } }, async (req, reply) => {
      // One message per POST: a batch (which MCP 2025-06-18 dropped) would run up to 100 tool calls under
      // one count of the rate limits, and one that cancels its own request is never answered.
      if (Array.isArray(req.body)) return reply.code(400).send(BATCH_REFUSED);
      const { answerMcp } = await load();
      const a = await answerMcp(services, {
        headers: headersOf(req),
        body: req.body,
        mayWrite: services.config.apiKey === null || req.apiKeyValid,
        caller: callerOf(services, req, reply),
        onError: (err) => req.log.error({ err }, 'mcp tool failed'),
      });
      reply.code(a.status);
      for (const [name, value] of a.headers) if (!OWN.has(name)) reply.header(name, value);
      return reply.send(a.body === '' ? undefined : a.body);
    });
    // No server-sent stream to open (GET) and no session to end (DELETE): every answer comes with its POST.
    app.get('/mcp', { schema: { hide: true } }, async () => {
      throw notHere();
    });
    app.delete('/mcp', { schema: { hide: true } }, async () => {
      throw notHere();
    });
  };
}
