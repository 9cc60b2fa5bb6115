import http from 'node:http';
import net from 'node:net';

/**
 * Clients for connection-flood tests: idle TCP connections opened from a chosen loopback address
 * (127.0.0.x), raw requests that read until the server closes, and HTTP requests from a chosen address.
 */

export interface Idle {
  readonly socket: net.Socket;
  /** Bytes the server sent (a refusal's answer, if any). */
  received: string;
  closed: boolean;
}

/** Opens `n` idle connections from `localAddress`; one that fails to connect (EMFILE, reset) counts as closed. */
export async function openIdle(port: number, localAddress: string, n: number): Promise<Idle[]> {
  const open = () =>
    new Promise<Idle>((resolve) => {
      const socket = net.connect({ port, host: '127.0.0.1', localAddress });
      const idle: Idle = { socket, received: '', closed: false };
      socket.on('data', (c: Buffer) => (idle.received += c.toString('latin1')));
      socket.on('error', () => {});
      socket.once('close', () => {
        idle.closed = true;
        resolve(idle);
      });
      socket.once('connect', () => resolve(idle));
    });
  const out: Idle[] = [];
  // In batches: a burst of thousands of SYNs at once overflows the listen backlog.
  for (let i = 0; i < n; i += 50) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, open))));
  }
  return out;
}

/** Writes `text` on a fresh connection from `localAddress` and reads until the server closes (≤ 5 s). */
export async function rawAsk(port: number, localAddress: string, text: string | Buffer): Promise<string> {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress });
  socket.on('error', () => {});
  let got = '';
  socket.on('data', (c: Buffer) => (got += c.toString('latin1')));
  // Not events.once(): it rejects on the 'error' a reset brings, and a reset is an answer here.
  const closed = new Promise((resolve) => socket.once('close', resolve));
  socket.once('connect', () => socket.write(text));
  const timer = setTimeout(() => socket.destroy(), 5_000);
  await closed;
  clearTimeout(timer);
  return got;
}

export interface Got {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

/** A request from `localAddress` on a connection of its own (no keep-alive pool), bounded to 10 s. */
export function request(
  port: number,
  path: string,
  localAddress: string,
  headers: Record<string, string> = {},
): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, localAddress, agent: false, headers });
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer to ${path} in 10 s`)));
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('error', (e) => reject(new Error(`${path} from ${localAddress}: ${e.message}`, { cause: e })));
    req.end();
  });
}

/** `rota_client_connections{door="..."}` and the like, from /metrics text; 0 when absent. */
export function metric(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

export async function waitUntil(check: () => boolean | Promise<boolean>, ms: number, what: string) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function closeAll(idle: readonly Idle[]): void {
  for (const i of idle) i.socket.destroy();
}
