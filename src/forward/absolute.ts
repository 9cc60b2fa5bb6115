/*
 * The HTTP listener's absolute-URI path: a scraper's `GET http://site/path` through the pool.
 *
 *   client ──GET http://site/path──▶ Rota :ROTA_PROXY_PORT
 *            admit (auth, parameters) ─▶ SSRF rules ─▶ Executor(streamedWork)
 *                                                          │ selection, failover, deadline
 *                                                          ▼
 *                                   upstream proxy (its own credentials) ──▶ site
 *   client ◀── status, end-to-end headers + X-Rota-Proxy-Id, X-Rota-Attempts, X-Rota-Session and
 *              X-Rota-Policy (when the call had them), body streamed with backpressure
 *
 * The deadline (ROTA_TIMEOUT) covers the answer's head; the body then flows with no cap, cut only when
 * idle for ROTA_TUNNEL_IDLE_TIMEOUT_S. A client that leaves aborts the upstream request at once.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { responseGone } from '../lib/abort.ts';
import { forwardedHeaders } from '../upstream/forwarded-headers.ts';
import type { StreamedRequest } from '../upstream/stream.ts';
import { refusal } from './answers.ts';
import { admit, endToEnd, type HttpDoorDeps, writeRefusal } from './http-door.ts';
import type { ProxyParams } from './params.ts';
import { absoluteTarget } from './target.ts';

/** Response headers that describe the hop to Rota, not the answer. */
const RESPONSE_HOP = ['transfer-encoding', 'connection', 'keep-alive', 'proxy-authenticate', 'upgrade'];

function hasBody(req: IncomingMessage): boolean {
  const len = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (len !== undefined && len !== '0');
}

export async function handleAbsolute(
  d: HttpDoorDeps,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const target = absoluteTarget(req.url);
  if (target === null) {
    d.metrics.answered('http', 'BAD_REQUEST');
    const why = 'This port is a forward proxy: send absolute-URI requests (http://...) or CONNECT';
    writeRefusal(res, refusal('BAD_REQUEST', why));
    return;
  }
  // Idle for ROTA_TUNNEL_IDLE_TIMEOUT_S mid-request (a stalled upload or answer): node:http closes it. Set
  // per request: between requests node:http's keep-alive timeout replaces it, and clears it at the next.
  req.socket.setTimeout(d.idle.idleMs);
  const admitted = admit(d.auth, req);
  const door = admitted instanceof Promise ? await admitted : admitted;
  if (!door.ok) {
    d.metrics.answered('http', door.refusal.code);
    writeRefusal(res, door.refusal);
    return;
  }
  await forwardRequest(d, req, res, target, door.params, 'http');
}

/** X-Rota-Attempts' values made once: a call takes at most ROTA_MAX_RETRIES (10) attempts. */
const ATTEMPTS: readonly string[] = Array.from({ length: 11 }, (_, n) => String(n));

/**
 * One request of a client forwarded through the engine and its answer written back: the absolute-URI
 * path's (`http`) and an inspected HTTPS connection's (`inspect`, forward/inspect.ts). `to` is the
 * target's origin (parsed once by the door) and the path to ask it for.
 */
export async function forwardRequest(
  d: HttpDoorDeps,
  req: IncomingMessage,
  res: ServerResponse,
  to: { readonly origin: URL; readonly path: string },
  params: ProxyParams,
  listener: 'http' | 'inspect',
): Promise<void> {
  let up = 0;
  const forwarded: StreamedRequest = {
    origin: to.origin,
    path: to.path,
    method: req.method ?? 'GET',
    // The client's names, order and case; Host's value follows the target URL; Expect is answered by
    // Node's server itself (100-continue).
    headers: forwardedHeaders(req.rawHeaders),
    body: hasBody(req) ? req : null,
    onBodyBytes: (n: number) => {
      up += n;
    },
    idleTimeoutMs: d.idle.idleMs,
  };
  // The engine's signal while the answer is awaited, then the body's (ResponseBody.pipeTo).
  const gone = responseGone(res);
  const out = await d.gateway.request(forwarded, params, gone, listener);
  if (!out.ok) {
    d.metrics.answered(listener, out.refusal.code);
    writeRefusal(res, out.refusal);
    return;
  }
  const answer = out.value;
  if (res.destroyed) {
    answer.body.destroy();
    d.gateway.ended(out, up, 0);
    return;
  }
  d.metrics.answered(listener, null);
  const headers = endToEnd(answer.headers, RESPONSE_HOP);
  headers['x-rota-proxy-id'] = out.proxyId;
  headers['x-rota-attempts'] = ATTEMPTS[out.attempts] ?? String(out.attempts);
  if (out.session !== undefined) headers['x-rota-session'] = out.session;
  if (out.policy !== undefined) headers['x-rota-policy'] = out.policy;
  res.writeHead(answer.statusCode, headers);
  answer.body.pipeTo(
    res,
    (down) => {
      d.metrics.bytes(listener, up, down);
      d.gateway.ended(out, up, down);
    },
    gone,
  );
}
