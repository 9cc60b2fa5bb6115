/**
 * The answer both API-relay yardsticks give (relay.ts, fastify-relay.ts): the envelope of Rota's
 * `POST request`, built with one JSON.stringify.
 */
import type { Dispatcher } from 'undici';

export function envelope(
  r: Dispatcher.ResponseData,
  body: string,
  index: number,
  started: number,
  meta: { request_id: string; version: string },
): string {
  return JSON.stringify({
    status: 'success',
    data: {
      status_code: r.statusCode,
      headers: r.headers,
      body,
      proxy_used: `proxy-${index}`,
      elapsed_ms: performance.now() - started,
    },
    error: null,
    meta: { request_id: meta.request_id, timestamp: new Date().toISOString(), version: meta.version },
  });
}
