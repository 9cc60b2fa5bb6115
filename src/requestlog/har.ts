import { STATUS_CODES } from '../runtime/node-http.ts';
import type { HarDocumentT, RequestRecordT } from '../schemas/requests.ts';

/**
 * Records as a HAR 1.2 log (http://www.softwareishard.com/blog/har-12-spec/) for browser tools and HAR
 * viewers: no bodies (sizes only), no header values (none are kept), no query string (none is kept).
 * A tunnel is an entry with method CONNECT and its authority as URL. Rota's own record rides along in
 * `_rota` (custom fields start with `_`).
 */

function urlOf(r: RequestRecordT): string {
  const host = r.host.includes(':') ? `[${r.host}]` : r.host;
  const port = r.port === null ? '' : `:${r.port}`;
  if (r.scheme === null) return `${host}${port}`;
  return `${r.scheme}://${host}${port}${r.path ?? '/'}`;
}

function entryOf(r: RequestRecordT): HarDocumentT['log']['entries'][number] {
  const status = r.status ?? 0;
  const wait = r.latency_ms;
  const receive = r.duration_ms === null ? 0 : Math.max(0, r.duration_ms - r.latency_ms);
  return {
    startedDateTime: r.time,
    time: wait + receive,
    request: {
      method: r.method,
      url: urlOf(r),
      httpVersion: 'HTTP/1.1',
      cookies: [],
      headers: [],
      queryString: [],
      headersSize: -1,
      bodySize: r.bytes_up,
    },
    response: {
      status,
      statusText: STATUS_CODES[status] ?? '',
      httpVersion: 'HTTP/1.1',
      cookies: [],
      headers: [],
      content: { size: r.bytes_down, mimeType: 'x-unknown' },
      redirectURL: '',
      headersSize: -1,
      bodySize: r.bytes_down,
    },
    cache: {},
    timings: { send: 0, wait, receive },
    _rota: r,
  };
}

export function harOf(records: readonly RequestRecordT[], version: string): HarDocumentT {
  return {
    log: {
      version: '1.2',
      creator: { name: 'Rota', version },
      entries: records.map(entryOf),
    },
  };
}
