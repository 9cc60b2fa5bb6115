import type { Duplex } from 'node:stream';
import type { DispatcherCache } from '../upstream/dispatchers.ts';
import { send } from '../upstream/send.ts';
import { type StreamedRequest, type StreamedResponse, stream } from '../upstream/stream.ts';
import type { TunnelTarget } from '../upstream/tunnel.ts';
import { UpstreamError, type UpstreamResponse } from '../upstream/types.ts';
import type { Work } from './work.ts';

/**
 * The three kinds of attempt (work.ts), each a thin adapter from the engine to one upstream primitive.
 */

/** Methods whose request may be sent twice (RFC 9110 9.2.2). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/**
 * A kept-alive connection to a proxy can be closed by the proxy just as a request is written on it
 * (tinyproxy answers HTTP/1.1 without `Connection: close` and closes ~1 ms later): the request fails
 * before any answer, through no fault of the proxy. An idempotent request is sent once more, at once, on
 * a fresh connection of the same proxy; only a second failure is the attempt's.
 */
function onceMoreIfStale<R>(method: string, run: () => Promise<R>): Promise<R> {
  const first = run();
  if (!IDEMPOTENT.has(method)) return first;
  return first.catch((err: unknown) => {
    if (!staleConnection(err)) throw err;
    return run();
  });
}

/** Only on a connection that had carried an earlier answer: a fresh one that broke is the proxy's doing. */
function staleConnection(err: unknown): boolean {
  return err instanceof UpstreamError && err.kind === 'connection_lost' && err.onReusedConnection;
}

export interface BufferedRequest {
  readonly url: URL;
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer | null;
}

/** `POST request`: the whole answer in memory, capped at ROTA_MAX_RESPONSE_BYTES. */
export function bufferedWork(
  dispatchers: DispatcherCache,
  req: BufferedRequest,
  maxResponseBytes: number,
): Work<UpstreamResponse> {
  return {
    method: req.method,
    replay: 'by-method',
    run: (a) =>
      onceMoreIfStale(req.method, () =>
        send(dispatchers.get(a.record), {
          ...req,
          deadline: a.deadline,
          maxResponseBytes,
          signal: a.signal,
          onResponseStart: a.onResponseStart,
        }),
      ),
    answer: (r) => ({ status: r.statusCode, headers: r.headers, body: r.body }),
    discard: () => {},
  };
}

/**
 * The listener's absolute-URI request: the answer's head by the deadline, its body streamed on. A
 * request whose body streams from the client cannot be sent twice once any of it left (`never`).
 */
export function streamedWork(dispatchers: DispatcherCache, req: StreamedRequest): Work<StreamedResponse> {
  const hasBody = req.body !== null;
  return {
    method: req.method,
    replay: hasBody ? 'never' : 'by-method',
    run: (a) => {
      // The attempt (AttemptRun) carries the deadline, signal and onResponseStart that stream() reads.
      const once = () => stream(dispatchers.get(a.record), req, a);
      // A body streamed from the client cannot be sent twice.
      return hasBody ? once() : onceMoreIfStale(req.method, once);
    },
    answer: (r) => ({ status: r.statusCode, headers: r.headers, body: null }),
    discard: (r) => r.body.destroy(),
  };
}

/**
 * A CONNECT or SOCKS5 tunnel: a socket connected to the target through the proxy. The attempt's deadline
 * passing is a `timeout` (the proxy did not get through in time: its fault); the caller leaving is
 * `aborted` (nobody's). Both are watched by the tunnel's own budget (upstream/tunnel.ts).
 */
export function tunnelWork(dispatchers: DispatcherCache, target: TunnelTarget): Work<Duplex> {
  return {
    method: 'CONNECT',
    replay: 'always',
    run: (a) => dispatchers.tunnel(a.record, target, { deadline: a.deadline, signal: a.signal }),
    answer: () => null,
    discard: (socket) => socket.destroy(),
  };
}
