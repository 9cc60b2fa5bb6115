import http from 'node:http';
import type https from 'node:https';
import net from 'node:net';
import { close, listen } from './proc.ts';

/** Size of the large-body route: exactly 1 MiB. */
export const BIG_BYTES = 1024 * 1024;

export interface Target {
  readonly port: number;
  /** Small JSON body, keep-alive. */
  readonly jsonUrl: string;
  /** 1 MiB of ASCII text (so that a gateway returning text has nothing to escape or re-encode). */
  readonly bigUrl: string;
  close(): Promise<void>;
}

const SMALL = Buffer.from(JSON.stringify({ ok: true, service: 'rota-bench-target', n: 42 }));
export const SMALL_BYTES = SMALL.length;
const BIG = Buffer.alloc(BIG_BYTES, 'abcdefghijklmnopqrstuvwxyz0123456789');

const CHUNK = Buffer.alloc(64 * 1024, 'abcdefghijklmnopqrstuvwxyz0123456789');

/** `/stream?bytes=N`: N bytes of ASCII text (with a content-length), written as the socket drains. */
function streamBody(res: http.ServerResponse, bytes: number): void {
  const total = Number.isSafeInteger(bytes) && bytes >= 0 ? bytes : 0;
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': total });
  let left = total;
  const pump = () => {
    while (left > 0) {
      const n = Math.min(left, CHUNK.length);
      left -= n;
      if (!res.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n))) return void res.once('drain', pump);
    }
    res.end();
  };
  res.once('close', () => {
    left = 0;
  });
  pump();
}

/** The target's routes (also served over HTTPS by the `inspect` scenario). */
export function serve(req: http.IncomingMessage, res: http.ServerResponse) {
  if (req.url?.startsWith('/stream?bytes=')) return streamBody(res, Number(req.url.slice(14)));
  const body = req.url === '/big' ? BIG : SMALL;
  const type = req.url === '/big' ? 'text/plain' : 'application/json';
  res.writeHead(200, { 'content-type': type, 'content-length': body.length });
  res.end(body);
}

/** The HTTP server every request ends at (or `server`, listening on `host`), in the harness process. */
export async function startTarget(
  server: http.Server | https.Server = http.createServer(serve),
  host = '127.0.0.1',
) {
  // Long keep-alive: the forward proxy's pooled connections should not be closed under our feet.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  const sockets = new Set<net.Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  const { port } = await listen(server, host);
  const target: Target = {
    port,
    jsonUrl: `http://127.0.0.1:${port}/json`,
    bigUrl: `http://127.0.0.1:${port}/big`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await close(server);
    },
  };
  return target;
}

export interface Blackholes {
  readonly ports: readonly number[];
  /** Connections accepted so far, over every port. */
  readonly accepted: () => number;
  close(): Promise<void>;
}

/** Dead proxies of the worst kind: they accept the TCP connection, read, and never answer. */
export async function startBlackholes(n: number): Promise<Blackholes> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const hole = (s: net.Socket) => {
    accepted++;
    sockets.add(s);
    s.on('error', () => {});
    s.resume();
    s.once('close', () => sockets.delete(s));
  };
  const servers = await Promise.all(Array.from({ length: n }, () => listen(net.createServer(hole))));
  return {
    ports: servers.map((s) => s.port),
    accepted: () => accepted,
    close: async () => {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map(close));
    },
  };
}
