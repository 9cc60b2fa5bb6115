import http from 'node:http';
import type https from 'node:https';
import net from 'node:net';
import { close, listen } from './proc.ts';

/** Bodies of ASCII text: a gateway returning text has nothing to escape or re-encode. */
const TEXT = 'abcdefghijklmnopqrstuvwxyz0123456789';
const SMALL = Buffer.from(JSON.stringify({ ok: true, service: 'rota-bench-target', n: 42 }));
const BIG = Buffer.alloc(1024 * 1024, TEXT);
const CHUNK = Buffer.alloc(64 * 1024, TEXT);

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

/** Sockets of `server` destroyed, then the server closed. */
function closer(server: net.Server) {
  const sockets = new Set<net.Socket>();
  server.on('connection', (s) => void sockets.add(s.once('close', () => sockets.delete(s))));
  return async () => {
    for (const s of sockets) s.destroy();
    await close(server);
  };
}

type Server = http.Server | https.Server;

/** The HTTP server every request ends at (or `server`, listening on `host`), in the harness process. */
export async function startTarget(server: Server = http.createServer(serve), host = '127.0.0.1') {
  // Long keep-alive: the forward proxy's pooled connections should not be closed under our feet.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  const end = closer(server);
  const { port } = await listen(server, host);
  const [jsonUrl, bigUrl] = [`http://127.0.0.1:${port}/json`, `http://127.0.0.1:${port}/big`];
  return { port, jsonUrl, bigUrl, close: end };
}
export type Target = Awaited<ReturnType<typeof startTarget>>;

/** Dead proxies of the worst kind: they accept the TCP connection, read, and never answer. */
export async function startBlackholes(n: number) {
  let accepted = 0;
  const hole = (s: net.Socket) => {
    accepted++;
    s.on('error', () => {}).resume();
  };
  const servers = await Promise.all(Array.from({ length: n }, () => listen(net.createServer(hole))));
  const closers = servers.map(closer);
  return {
    ports: servers.map((s) => s.port),
    /** Connections accepted so far, over every port. */
    accepted: () => accepted,
    close: () => Promise.all(closers.map((c) => c())),
  };
}
