import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { type RotaErrorCode, specOf } from '../errors/codes.ts';
import { STATUS_CODES } from '../runtime/node-http.ts';
import { errorBody } from './envelope.ts';
import { SECURITY_HEADERS } from './security-headers.ts';

/** What Node's parser reports before a request exists, and what we answer with. */
function classify(code: string | undefined): { code: RotaErrorCode; message: string } {
  if (code === 'HPE_HEADER_OVERFLOW')
    return { code: 'REQUEST_HEADERS_TOO_LARGE', message: 'Request headers are too large' };
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return { code: 'CLIENT_TIMEOUT', message: 'The request did not arrive in time' };
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW')
    return { code: 'PAYLOAD_TOO_LARGE', message: 'Chunk extensions are too large' };
  return { code: 'BAD_REQUEST', message: 'The request is not valid HTTP/1.1' };
}

/** The response bytes: the envelope, the request id and the security headers, then the connection closes. */
export function clientErrorResponse(nodeCode: string | undefined, requestId: string, now: Date): string {
  const { code, message } = classify(nodeCode);
  return rawErrorResponse(code, message, requestId, now);
}

/** An error envelope as raw response bytes, for answers written before any request exists. */
export function rawErrorResponse(
  code: RotaErrorCode,
  message: string,
  requestId: string,
  now: Date,
  extra: Readonly<Record<string, string>> = {},
): string {
  const { status } = specOf(code);
  const body = JSON.stringify(errorBody({ id: requestId }, code, message, null, undefined, now));
  const headers = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    `x-request-id: ${requestId}`,
    ...Object.entries(SECURITY_HEADERS).map(([k, v]) => `${k}: ${v}`),
    ...Object.entries(extra).map(([k, v]) => `${k}: ${v}`),
    'connection: close',
  ];
  return `${headers.join('\r\n')}\r\n\r\n${body}`;
}

/** The answer to a connection past the connection caps (net/connection-guard.ts), which then closes. */
export function tooManyConnectionsResponse(): string {
  return rawErrorResponse('TOO_MANY_CONNECTIONS', 'Too many connections', randomUUID(), new Date(), {
    'retry-after': '1',
  });
}

/**
 * Whether an answer may be written: not when the socket is closing, nor when a response on this
 * keep-alive connection has already started (a streamed export, say), since the envelope would land in
 * the middle of its body. Node's own rule, which reads the same internal field.
 */
export function mayAnswer(socket: { writable: boolean; _httpMessage?: { headersSent?: boolean } | null }) {
  return socket.writable && socket._httpMessage?.headersSent !== true;
}

/**
 * Fastify's `clientErrorHandler`: Node's parser refuses some requests (oversized header block, garbage,
 * a head that never completes) before Fastify sees them. Those get the envelope too, so a client never
 * has to parse two error formats, and one log line, so an operator sees them.
 */
export function clientErrorHandler(log: FastifyBaseLogger) {
  return (err: Error & { code?: string }, socket: Socket): void => {
    // A reset connection has nobody to answer (Node's own rule).
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const requestId = randomUUID();
    if (mayAnswer(socket)) socket.write(clientErrorResponse(err.code, requestId, new Date()));
    log.info(
      { request_id: requestId, client_ip: socket.remoteAddress, parser_error: err.code ?? 'unknown' },
      'client error',
    );
    socket.destroy();
  };
}
