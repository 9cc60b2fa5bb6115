/*
 * The HTTP forward-proxy listener on ROTA_PROXY_PORT: node:http parses, two paths serve.
 *
 *   request with an absolute URI ──▶ absolute.ts   (a streamed request through the pool)
 *   CONNECT host:port            ──▶ connect.ts    (a tunnel through the pool)
 *   a head Node's parser refuses ──▶ 400 / 431 / 408 here, and the connection closes
 *   a version other than 1.0, 1.1 ──▶ 505 here (HTTP/0.9, HTTP/2.0 parse), and the connection closes
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { createServer } from '../runtime/node-http.ts';
import { handleAbsolute } from './absolute.ts';
import { type Refusal, refusal } from './answers.ts';
import { handleConnect } from './connect.ts';
import { type HttpDoorDeps, writeRawRefusal, writeRefusal } from './http-door.ts';

/** A request head not complete within this long gets 408 (slowloris). */
const HEAD_TIMEOUT_MS = 10_000;

function parserRefusal(err: NodeJS.ErrnoException): Refusal {
  if (err.code === 'HPE_HEADER_OVERFLOW')
    return refusal('REQUEST_HEADERS_TOO_LARGE', 'Request head too large');
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return refusal('CLIENT_TIMEOUT', 'Request head timed out');
  return refusal('BAD_REQUEST', 'Malformed request');
}

/**
 * Node's parser takes a request line without a version as HTTP/0.9, and `HTTP/2.0` as is; neither is a
 * request this listener forwards.
 */
export function unsupportedVersion(req: http.IncomingMessage): boolean {
  return req.httpVersionMajor !== 1 || req.httpVersionMinor > 1;
}

/** On a raw socket (CONNECT), which writeRawRefusal closes; through node:http, with Connection: close. */
const VERSION_REFUSED_RAW: Refusal = refusal('HTTP_VERSION_NOT_SUPPORTED');
const VERSION_REFUSED: Refusal = { ...VERSION_REFUSED_RAW, headers: { connection: 'close' } };

export function createHttpListener(d: HttpDoorDeps, onError: (err: unknown) => void): http.Server {
  const server = createServer({
    headersTimeout: HEAD_TIMEOUT_MS,
    // A streamed upload may take as long as it keeps moving: idleness is the bound, not a total.
    requestTimeout: 0,
    keepAliveTimeout: 5_000,
    // How often Node looks for heads past headersTimeout (default 30 s would let them linger 40 s).
    connectionsCheckingInterval: 1_000,
    noDelay: true,
  });
  // No server.timeout: it would set a timer on every connection, CONNECTs included, which the tunnel then
  // has to clear. An absolute-URI request sets its own (absolute.ts); a tunnel has the idle sweeper.
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (unsupportedVersion(req)) {
      d.metrics.answered('http', VERSION_REFUSED.code);
      writeRefusal(res, VERSION_REFUSED);
      return;
    }
    handleAbsolute(d, req, res).catch((err: unknown) => {
      onError(err);
      writeRefusal(res, refusal('INTERNAL_ERROR', 'internal error'));
    });
  });
  server.on('connect', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    if (unsupportedVersion(req)) {
      socket.on('error', () => socket.destroy());
      d.metrics.answered('connect', VERSION_REFUSED_RAW.code);
      writeRawRefusal(socket, VERSION_REFUSED_RAW);
      return;
    }
    handleConnect(d, req, socket, head).catch((err: unknown) => {
      onError(err);
      writeRawRefusal(socket, refusal('INTERNAL_ERROR', 'internal error'));
    });
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const r = parserRefusal(err);
    d.metrics.answered('http', r.code);
    writeRawRefusal(socket, r);
  });
  return server;
}
