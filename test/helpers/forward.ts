import http from 'node:http';
import net from 'node:net';
import { makeApp, type TestApp } from './app.ts';
import { freePort } from './real-proxies.ts';

/**
 * Helpers for the listener tests: a real app with its listeners on loopback ports, and small clients
 * that speak to them the way scrapers do (absolute-URI requests, CONNECT, SOCKS5), byte for byte.
 */

export interface ListeningApp extends TestApp {
  readonly httpPort: number;
  readonly socksPort: number;
}

export async function listeningApp(
  env: Record<string, string> = {},
  overrides: Parameters<typeof makeApp>[1] = {},
): Promise<ListeningApp> {
  const [httpPort, socksPort] = [await freePort(), await freePort()];
  const t = await makeApp(
    {
      ROTA_SSRF_ALLOW: '127.0.0.0/8',
      ROTA_HEDGE_DELAY_S: '0',
      ROTA_PROXY_PORT: String(httpPort),
      ROTA_SOCKS_PORT: String(socksPort),
      ...env,
    },
    overrides,
  );
  await t.services.listeners.start();
  return { ...t, httpPort, socksPort };
}

export async function addUpstream(t: TestApp, body: Record<string, unknown>): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/proxies',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  if (res.statusCode !== 201) throw new Error(`add proxy: ${res.statusCode} ${res.body}`);
  return (res.json() as { data: { id: string } }).data.id;
}

export interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

export function basic(user: string, pass: string): string {
  return `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
}

/** An absolute-URI request through the HTTP listener (a fresh connection each time). */
export function viaProxy(
  port: number,
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: Buffer | string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      method: opts.method ?? 'GET',
      path: url,
      headers: { host: URL.canParse(url) ? new URL(url).host : 'unknown', ...opts.headers },
      agent: false,
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

export interface Tunnel {
  readonly status: number;
  readonly head: string;
  readonly socket: net.Socket;
}

/** Sends CONNECT and reads the answer's head; the socket stays open for the tunnel. */
export function connectVia(
  port: number,
  authority: string,
  headers: Record<string, string> = {},
  /** The loopback address the client connects from (another client, for per-address budgets). */
  localAddress?: string,
): Promise<Tunnel> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, ...(localAddress ? { localAddress } : {}) });
    const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${extra.join('')}\r\n`);
    let buf = Buffer.alloc(0);
    const onData = (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      const end = buf.indexOf('\r\n\r\n');
      if (end === -1) return;
      socket.off('data', onData);
      socket.pause();
      const head = buf.subarray(0, end).toString('latin1');
      const rest = buf.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), head, socket });
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.once('close', () => reject(new Error(`closed before an answer: ${buf.toString('latin1')}`)));
  });
}

/** Reads from `socket` until it closes (or `until` matches what was read). */
export function readAll(socket: net.Socket, until?: (s: string) => boolean): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    if (socket.destroyed) return resolve(text);
    socket.on('data', (c: Buffer) => {
      text += c.toString('latin1');
      if (until?.(text)) resolve(text);
    });
    socket.once('close', () => resolve(text));
    socket.once('error', () => resolve(text));
    socket.resume();
  });
}

/** `GET path` over an open tunnel to a plain-http target; the whole answer as text. */
export async function getOverTunnel(socket: net.Socket, host: string, path: string): Promise<string> {
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  return readAll(socket);
}

export async function waitFor(check: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Reads exact byte counts from a socket, in order. */
class Bytes {
  #buf = Buffer.alloc(0);
  #want: { n: number; resolve: (b: Buffer | null) => void } | null = null;
  #closed = false;
  readonly socket: net.Socket;
  constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (c: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, c]);
      this.#serve();
    });
    const end = () => {
      this.#closed = true;
      this.#serve();
    };
    socket.once('close', end);
    socket.once('error', end);
  }
  #serve(): void {
    const w = this.#want;
    if (w === null) return;
    if (this.#buf.length >= w.n) {
      this.#want = null;
      const out = this.#buf.subarray(0, w.n);
      this.#buf = this.#buf.subarray(w.n);
      w.resolve(out);
    } else if (this.#closed) {
      this.#want = null;
      w.resolve(null);
    }
  }
  take(n: number): Promise<Buffer | null> {
    return new Promise((resolve) => {
      this.#want = { n, resolve };
      this.#serve();
    });
  }
  /** Hands the socket back with what was read ahead. */
  release(): net.Socket {
    this.socket.removeAllListeners('data');
    this.socket.pause();
    if (this.#buf.length > 0) this.socket.unshift(this.#buf);
    return this.socket;
  }
}

export interface SocksOptions {
  readonly methods?: number[];
  readonly username?: string;
  readonly password?: string;
  readonly command?: number;
  /** Raw address bytes (ATYP + address); default: a domain name built from `host`. */
  readonly address?: Buffer;
  readonly host?: string;
  readonly port: number;
}

export interface SocksResult {
  /** The method the server chose, or null when it closed first. */
  readonly method: number | null;
  /** RFC 1929 status, when user/pass was used. */
  readonly authStatus: number | null;
  /** The reply code to the request, or null when the server closed first. */
  readonly reply: number | null;
  readonly socket: net.Socket;
}

function addressBytes(o: SocksOptions): Buffer {
  if (o.address) return o.address;
  const host = o.host ?? '127.0.0.1';
  if (net.isIPv4(host)) return Buffer.from([1, ...host.split('.').map(Number)]);
  return Buffer.concat([Buffer.from([3, host.length]), Buffer.from(host, 'latin1')]);
}

/** A SOCKS5 client, step by step, stopping where the server stops. */
export async function socks5(port: number, o: SocksOptions): Promise<SocksResult> {
  const socket = net.connect({ host: '127.0.0.1', port });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const r = new Bytes(socket);
  const methods = o.methods ?? (o.username !== undefined ? [0x00, 0x02] : [0x00]);
  socket.write(Buffer.from([5, methods.length, ...methods]));
  const sel = await r.take(2);
  const method = sel?.[1] ?? null;
  const done = (authStatus: number | null, reply: number | null) => ({
    method,
    authStatus,
    reply,
    socket: r.release(),
  });
  if (method === null || method === 0xff) return done(null, null);
  let authStatus: number | null = null;
  if (method === 0x02) {
    const u = Buffer.from(o.username ?? '', 'utf8');
    const p = Buffer.from(o.password ?? '', 'utf8');
    socket.write(Buffer.concat([Buffer.from([1, u.length]), u, Buffer.from([p.length]), p]));
    authStatus = (await r.take(2))?.[1] ?? null;
    if (authStatus !== 0) return done(authStatus, null);
  }
  const portBytes = Buffer.from([o.port >> 8, o.port & 0xff]);
  socket.write(Buffer.concat([Buffer.from([5, o.command ?? 1, 0]), addressBytes(o), portBytes]));
  const head = await r.take(4);
  if (head === null) return done(authStatus, null);
  const rest = head[3] === 4 ? 18 : head[3] === 3 ? 1 + ((await r.take(1))?.[0] ?? 0) + 2 : 6;
  await r.take(head[3] === 3 ? rest - 1 : rest);
  return done(authStatus, head[1] ?? null);
}
