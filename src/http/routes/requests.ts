/**
 * The request log (src/requestlog/): `GET requests` (a page, newest first, or HAR), `GET requests/stream`
 * (Server-Sent Events: each call as it ends). Per instance: each instance answers with its own calls.
 */
import { PassThrough } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { RotaError } from '../../errors/rota-error.ts';
import { ipBucket } from '../../lib/ip-bucket.ts';
import type { LogEntry } from '../../requestlog/entry.ts';
import { harOf } from '../../requestlog/har.ts';
import { type LogFilter, matches, type RequestLog } from '../../requestlog/log.ts';
import { type LabelOf, recordView } from '../../requestlog/view.ts';
import { Envelope, errorResponses } from '../../schemas/common.ts';
import {
  HarDocument,
  RequestsPage,
  type RequestsPageT,
  RequestsQuery,
  type RequestsQueryT,
  StreamQuery,
  type StreamQueryT,
} from '../../schemas/requests.ts';
import type { Services } from '../../services.ts';
import { VERSION } from '../../version.ts';
import { ok } from '../envelope.ts';
import { ProxyLabels } from '../proxy-labels.ts';

const TAG = ['requests'];
/** Streams open at once, across clients. */
const MAX_STREAMS = 32;
/** Streams open at once from one client (its address, an IPv6 /64 as one, as rate limits count it). */
const MAX_STREAMS_PER_CLIENT = 4;
/** A client this far behind is dropped rather than buffered without end. */
const MAX_BACKLOG_BYTES = 1 << 20;
const PING_MS = 15_000;

function filterOf(q: StreamQueryT): LogFilter {
  return { host: q.host?.toLowerCase(), proxyId: q.proxy_id, outcome: q.outcome, door: q.door };
}

function eventOf(e: LogEntry, labelOf: LabelOf): string {
  // The id is the order it was told in (LogEntry.told), which Last-Event-ID hands back on reconnection.
  return `id: ${e.told}\nevent: request\ndata: ${JSON.stringify(recordView(e, labelOf))}\n\n`;
}

/** One subscription to the log for every open stream: each call's JSON is made once, whoever watches. */
class StreamHub {
  readonly #clients = new Map<PassThrough, LogFilter>();
  /** Open streams by client address. */
  readonly #byAddress = new Map<string, number>();
  readonly #log: RequestLog;
  readonly #labelOf: LabelOf;
  #stop: (() => void) | null = null;

  constructor(log: RequestLog, labelOf: LabelOf) {
    this.#log = log;
    this.#labelOf = labelOf;
  }

  /** Whether `address` may open one more stream (the total, then its own share). */
  refusal(address: string): RotaError | null {
    if (this.#clients.size >= MAX_STREAMS) {
      return new RotaError('SERVICE_UNAVAILABLE', `At most ${MAX_STREAMS} request log streams at once`);
    }
    if ((this.#byAddress.get(address) ?? 0) >= MAX_STREAMS_PER_CLIENT) {
      return new RotaError(
        'TOO_MANY_CONNECTIONS',
        `At most ${MAX_STREAMS_PER_CLIENT} request log streams from one client address`,
      );
    }
    return null;
  }

  add(out: PassThrough, f: LogFilter, address: string): void {
    this.#clients.set(out, f);
    this.#byAddress.set(address, (this.#byAddress.get(address) ?? 0) + 1);
    this.#stop ??= this.#log.subscribe((e) => this.#send(e));
    const ping = setInterval(() => out.write(': ping\n\n'), PING_MS);
    ping.unref();
    out.once('close', () => {
      clearInterval(ping);
      this.#clients.delete(out);
      const left = (this.#byAddress.get(address) ?? 1) - 1;
      if (left > 0) this.#byAddress.set(address, left);
      else this.#byAddress.delete(address);
      if (this.#clients.size === 0) {
        this.#stop?.();
        this.#stop = null;
      }
    });
  }

  /** Ends every stream (the server is closing: an open stream would hold its close up forever). */
  endAll(): void {
    for (const out of [...this.#clients.keys()]) {
      // Out of the list at once: calls that end meanwhile are not written after its end.
      this.#clients.delete(out);
      out.end();
    }
  }

  #send(e: LogEntry): void {
    let event: string | null = null;
    for (const [out, f] of this.#clients) {
      if (!matches(e, f)) continue;
      if (out.writableLength > MAX_BACKLOG_BYTES) {
        out.destroy();
        continue;
      }
      event ??= eventOf(e, this.#labelOf);
      out.write(event);
    }
  }
}

export function requestLogRoutes(services: Services): FastifyPluginAsync {
  const log = services.requestLog;
  const labels = new ProxyLabels(services.pool, services.clock.now);
  const hub = new StreamHub(log, labels.labelOf);
  return async (app) => {
    // Before the server waits for its connections to end: a live stream never ends on its own.
    app.addHook('preClose', (done) => {
      hub.endAll();
      done();
    });
    app.get<{ Querystring: RequestsQueryT }>(
      '/requests',
      {
        schema: {
          tags: TAG,
          summary: 'The request log: recent calls with their attempts, newest first',
          description:
            'One record per call on every door (a tunnel is one record), kept in a ring of ' +
            'ROTA_REQUEST_LOG_SIZE. No query string, header value, body or credential is ever kept. ' +
            'This instance only. `format=har` answers the page as a HAR 1.2 log instead of the envelope.',
          querystring: RequestsQuery,
          response: {
            200: {
              description: 'The page in the envelope, or (format=har) a HAR 1.2 document',
              content: {
                'application/json': { schema: Type.Union([Envelope(RequestsPage), HarDocument]) },
              },
            },
            ...errorResponses(422),
          },
        },
      },
      async (req, reply) => {
        const q = req.query;
        const f: LogFilter = { ...filterOf(q), since: q.since };
        const { items, total } = log.list(f, q.page, q.page_size);
        const records = items.map((e) => recordView(e, labels.labelOf));
        if (q.format === 'har') {
          reply.header('content-disposition', 'attachment; filename="rota-requests.har"');
          return harOf(records, VERSION);
        }
        const page: RequestsPageT = {
          items: records,
          total,
          page: q.page,
          page_size: q.page_size,
          capacity: log.capacity,
          scope: 'instance',
        };
        return ok(req, page);
      },
    );

    app.get<{ Querystring: StreamQueryT }>(
      '/requests/stream',
      {
        schema: {
          tags: TAG,
          summary: 'The request log, live: each call as it ends (Server-Sent Events)',
          description:
            'Events `request` whose data is one record as in GET requests, filtered like it; each event id ' +
            'is its place in the order calls ended on this instance (not the record id: calls end in ' +
            `another order than they begin); a comment every ${PING_MS / 1000} s keeps the connection ` +
            'open. With `Last-Event-ID` (an EventSource reconnecting) the calls that ended after that one ' +
            'come first (the newest 1,000 at most). The stream stays ' +
            'open for a client that accepts `text/event-stream` (every EventSource does); any other ' +
            'gets those first events and the answer ends. This instance only. At most ' +
            `${MAX_STREAMS} streams at once (503 SERVICE_UNAVAILABLE), ${MAX_STREAMS_PER_CLIENT} from one ` +
            'client address (503 TOO_MANY_CONNECTIONS); a client more than 1 MiB behind is dropped.',
          querystring: StreamQuery,
          produces: ['text/event-stream'],
          response: {
            200: {
              description: 'A stream of `event: request` messages',
              content: { 'text/event-stream': { schema: Type.String() } },
            },
            ...errorResponses(422, 503),
          },
        },
      },
      async (req, reply) => {
        const live = (req.headers.accept ?? '').includes('text/event-stream');
        const client = ipBucket(req.clientIp);
        const refused = live ? hub.refusal(client) : null;
        if (refused) throw refused;
        const f = filterOf(req.query);
        const out = new PassThrough();
        out.write(`retry: 3000\n: the request log of this instance (capacity ${log.capacity})\n\n`);
        const after = Number(req.headers['last-event-id']);
        if (Number.isSafeInteger(after)) {
          for (const e of log.after(after, f)) out.write(eventOf(e, labels.labelOf));
        }
        if (live) {
          hub.add(out, f, client);
          req.raw.once('close', () => out.destroy());
        } else out.end();
        reply
          .type('text/event-stream; charset=utf-8')
          .header('cache-control', 'no-store')
          .header('x-accel-buffering', 'no');
        return reply.send(out);
      },
    );
  };
}
