import { readdir } from 'node:fs/promises';
import net from 'node:net';

/**
 * The client side of a CONNECT tunnel and of one HTTP/1.1 exchange inside it, on a raw socket, for the
 * tunnel load generator (bench/lib/tunnel-load.ts). Only what the benchmark's target sends is understood:
 * a status line, headers, and a body with a content-length.
 */
export interface Tunnel {
  readonly socket: net.Socket;
  /** Bytes that arrived after the proxy's 200 head (the start of the target's answer, if any). */
  readonly rest: Buffer;
  /** The proxy's 200 carried an X-Rota-Proxy-Id header. */
  readonly proxyId: boolean;
}

/** A failed tunnel or exchange; `kind` groups failures in the report (timeout, closed, status 502...). */
export class WireError extends Error {
  readonly kind: string;
  constructor(kind: string, message: string) {
    super(message);
    this.kind = kind;
  }
}

interface Head {
  readonly status: number;
  /** The head carried an X-Rota-Proxy-Id header. */
  readonly proxyId: boolean;
  readonly contentLength: number | null;
  readonly rest: Buffer;
}

/** Reads bytes until the end of an HTTP head; resolves with its status, content-length and what followed. */
function readHead(socket: net.Socket, initial: Buffer, timeoutMs: number): Promise<Head> {
  return new Promise((resolve, reject) => {
    let seen = initial;
    const timer = setTimeout(
      () => done(new WireError('timeout', `no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const done = (err: Error | null, head?: Head) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      socket.off('error', onError);
      if (err) reject(err);
      else resolve(head!);
    };
    const parse = () => {
      const end = seen.indexOf('\r\n\r\n');
      if (end === -1) {
        if (seen.length > 64 * 1024) done(new WireError('protocol', 'head over 64 KiB'));
        return;
      }
      const text = seen.toString('latin1', 0, end);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
      const cl = /\r\ncontent-length:\s*(\d+)/i.exec(text)?.[1];
      const contentLength = cl === undefined ? null : Number(cl);
      const proxyId = /\r\nx-rota-proxy-id:/i.test(text);
      done(null, { status, proxyId, contentLength, rest: seen.subarray(end + 4) });
    };
    const onData = (chunk: Buffer) => {
      seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
      parse();
    };
    const onClose = () => done(new WireError('closed', 'closed before a full head'));
    const onError = (e: Error) => done(new WireError('socket', e.message));
    socket.on('data', onData);
    socket.once('close', onClose);
    socket.once('error', onError);
    if (seen.length > 0) parse();
  });
}

/** Counts `length` body bytes (the first of which may already be in `initial`); resolves with the excess. */
function skipBody(socket: net.Socket, initial: Buffer, length: number, timeoutMs: number): Promise<Buffer> {
  if (initial.length >= length) return Promise.resolve(initial.subarray(length));
  return new Promise((resolve, reject) => {
    let left = length - initial.length;
    const timer = setTimeout(() => done(new WireError('timeout', 'body stalled')), timeoutMs);
    const done = (err: Error | null, rest?: Buffer) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      socket.off('error', onError);
      if (err) reject(err);
      else resolve(rest!);
    };
    const onData = (chunk: Buffer) => {
      if (chunk.length < left) {
        left -= chunk.length;
        return;
      }
      done(null, chunk.subarray(left));
    };
    const onClose = () => done(new WireError('closed', `closed with ${left} body bytes missing`));
    const onError = (e: Error) => done(new WireError('socket', e.message));
    socket.on('data', onData);
    socket.once('close', onClose);
    socket.once('error', onError);
  });
}

/** Connects to the proxy, asks for a tunnel to `authority` (host:port) and waits for a 2xx. */
export async function openTunnel(proxyPort: number, authority: string, timeoutMs: number): Promise<Tunnel> {
  const socket = net.connect({ host: '127.0.0.1', port: proxyPort, noDelay: true });
  // Errors are seen by whoever reads next; an idle tunnel reset by the proxy must not crash the process.
  socket.on('error', () => {});
  try {
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
    const head = await readHead(socket, Buffer.alloc(0), timeoutMs);
    if (head.status < 200 || head.status > 299)
      throw new WireError(`status ${head.status || 'unparsed'}`, `CONNECT answered ${head.status}`);
    return { socket, rest: head.rest, proxyId: head.proxyId };
  } catch (e) {
    socket.destroy();
    throw e;
  }
}

/** One keep-alive GET on an open socket; resolves with the status, body size and any bytes after it. */
export async function get(
  socket: net.Socket,
  initial: Buffer,
  host: string,
  path: string,
  timeoutMs: number,
): Promise<{ status: number; bodyBytes: number; rest: Buffer }> {
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
  const head = await readHead(socket, initial, timeoutMs);
  if (head.contentLength === null) throw new WireError('protocol', 'answer without content-length');
  const rest = await skipBody(socket, head.rest, head.contentLength, timeoutMs);
  return { status: head.status, bodyBytes: head.contentLength, rest };
}

/** Number of open file descriptors of a process, or null once it is gone. */
export async function countFds(pid: number): Promise<number | null> {
  try {
    return (await readdir(`/proc/${pid}/fd`)).length;
  } catch {
    return null;
  }
}
