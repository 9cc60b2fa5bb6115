import { randomBytes } from 'node:crypto';
import tls from 'node:tls';
import { acceptFor, decodeFrame, encodeText } from '../fixtures/ws-site.ts';
import { connectVia } from './forward.ts';

/**
 * A WebSocket client written by hand, as a scraper behind a forward proxy would use one: CONNECT through
 * Rota's HTTP listener, TLS trusting `ca` (Rota's CA for an inspected host), the opening handshake, one
 * masked text frame, and the echo read back. Node's own WebSocket cannot use a proxy.
 */

export interface WsOptions {
  readonly proxyPort: number;
  /** The target's address: an IP literal (no SNI) or a name. */
  readonly host: string;
  readonly port: number;
  readonly ca: string;
  readonly path?: string;
  readonly message?: string;
  /** Extra headers on the CONNECT request (Proxy-Authorization). */
  readonly connectHeaders?: Record<string, string>;
  /** Extra headers on the upgrade request (X-Rota-Session). */
  readonly headers?: Record<string, string>;
}

export interface WsExchange {
  /** Status of the upgrade's answer (101 when the target accepted). */
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  /** Whether Sec-WebSocket-Accept matched the key sent. */
  readonly acceptOk: boolean;
  /** The echoed text, or null without a 101. */
  readonly echo: string | null;
  /** The body after a refusal's head (Rota's one-line message). */
  readonly body: string;
}

class Reader {
  #buf = Buffer.alloc(0);
  #wake: (() => void) | null = null;
  #closed = false;
  constructor(socket: tls.TLSSocket) {
    socket.on('data', (c: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, c]);
      this.#wake?.();
    });
    socket.on('close', () => {
      this.#closed = true;
      this.#wake?.();
    });
  }
  get closed(): boolean {
    return this.#closed;
  }
  /** Waits until `take` finds something in the buffer (it returns how many bytes it used), or the end. */
  async read<T>(take: (buf: Buffer) => { value: T; used: number } | null, ms = 10_000): Promise<T | null> {
    const until = Date.now() + ms;
    for (;;) {
      const got = take(this.#buf);
      if (got) {
        this.#buf = this.#buf.subarray(got.used);
        return got.value;
      }
      if (this.#closed || Date.now() > until) return null;
      await new Promise<void>((r) => {
        this.#wake = r;
        setTimeout(r, 100);
      });
    }
  }
  rest(): string {
    return this.#buf.toString('utf8');
  }
}

function headOf(buf: Buffer): { value: string; used: number } | null {
  const end = buf.indexOf('\r\n\r\n');
  return end === -1 ? null : { value: buf.subarray(0, end).toString('latin1'), used: end + 4 };
}

function parseHead(head: string): { status: number; headers: Record<string, string> } {
  const [line = '', ...rest] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of rest) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(line)?.[1] ?? 0), headers };
}

async function secure(o: WsOptions): Promise<tls.TLSSocket> {
  const tun = await connectVia(o.proxyPort, `${o.host}:${o.port}`, o.connectHeaders);
  if (tun.status !== 200) throw new Error(`CONNECT answered ${tun.status}: ${tun.head}`);
  const isIp = /^[\d.]+$|:/.test(o.host);
  const socket = tls.connect({
    socket: tun.socket,
    host: o.host,
    ca: o.ca,
    ...(isIp ? {} : { servername: o.host }),
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => resolve());
    socket.once('error', reject);
  });
  return socket;
}

/** One exchange: upgrade, one text frame up, its echo down, then a close frame. */
export async function wsEcho(o: WsOptions): Promise<WsExchange> {
  const socket = await secure(o);
  socket.on('error', () => {});
  try {
    const reader = new Reader(socket);
    const key = randomBytes(16).toString('base64');
    const extra = Object.entries(o.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`);
    socket.write(
      `GET ${o.path ?? '/ws'} HTTP/1.1\r\nHost: ${o.host}:${o.port}\r\nUpgrade: websocket\r\n` +
        `Connection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n${extra.join('')}\r\n`,
    );
    const head = await reader.read(headOf);
    if (head === null) throw new Error(`no answer to the upgrade: ${reader.rest()}`);
    const { status, headers } = parseHead(head);
    const acceptOk = headers['sec-websocket-accept'] === acceptFor(key);
    if (status !== 101) {
      await reader.read(() => null, reader.closed ? 0 : 1_000);
      return { status, headers, acceptOk, echo: null, body: reader.rest() };
    }
    socket.write(encodeText(o.message ?? 'hello through rota', randomBytes(4)));
    const frame = await reader.read((buf) => {
      const f = decodeFrame(buf);
      return f ? { value: f, used: f.size } : null;
    });
    socket.write(Buffer.concat([Buffer.from([0x88, 0x80]), randomBytes(4)]));
    return { status, headers, acceptOk, echo: frame?.text ?? null, body: '' };
  } finally {
    socket.destroy();
  }
}
