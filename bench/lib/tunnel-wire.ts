import net from 'node:net';

/**
 * The client side of a CONNECT tunnel and of one HTTP/1.1 exchange inside it, on a raw socket, for the
 * tunnel load generator (bench/lib/tunnels.ts). Only what the benchmark's target sends is understood:
 * a status line, headers, and a body with a content-length.
 */
export interface Tunnel {
  readonly socket: net.Socket;
  /** Bytes that arrived after the proxy's 200 head (the start of the target's answer, if any). */
  readonly rest: Buffer;
}

/** A failed tunnel or exchange; `kind` names the failure (timeout, closed, status 502...). */
export class WireError extends Error {
  readonly kind: string;
  constructor(kind: string, message: string) {
    super(message);
    this.kind = kind;
  }
}

/**
 * Feeds `initial`, then every chunk that arrives, to `feed` until it returns a value (or throws); fails
 * on a timeout, a close or a socket error first.
 */
function read<T>(socket: net.Socket, initial: Buffer, timeoutMs: number, feed: (b: Buffer) => T | undefined) {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => done(new WireError('timeout', `nothing for ${timeoutMs} ms`)), timeoutMs);
    const done = (err: Error | null, value?: T) => {
      clearTimeout(timer);
      socket.off('data', onData).off('close', onClose).off('error', onError);
      if (err) reject(err);
      else resolve(value as T);
    };
    const onData = (chunk: Buffer) => {
      try {
        const v = feed(chunk);
        if (v !== undefined) done(null, v);
      } catch (e) {
        done(e as Error);
      }
    };
    const onClose = () => done(new WireError('closed', 'closed before the answer was complete'));
    const onError = (e: Error) => done(new WireError('socket', e.message));
    socket.on('data', onData).once('close', onClose).once('error', onError);
    if (initial.length > 0) onData(initial);
  });
}

/** Reads bytes until the end of an HTTP head: its status, content-length and what followed. */
function readHead(socket: net.Socket, initial: Buffer, timeoutMs: number) {
  let seen: Buffer = Buffer.alloc(0);
  return read(socket, initial, timeoutMs, (chunk) => {
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    const end = seen.indexOf('\r\n\r\n');
    if (end === -1) {
      if (seen.length > 64 * 1024) throw new WireError('protocol', 'head over 64 KiB');
      return undefined;
    }
    const text = seen.toString('latin1', 0, end);
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
    const cl = /\r\ncontent-length:\s*(\d+)/i.exec(text)?.[1];
    return { status, contentLength: cl === undefined ? null : Number(cl), rest: seen.subarray(end + 4) };
  });
}

/** Counts `length` body bytes (the first of which may be in `initial`) without keeping them; the excess. */
function skipBody(socket: net.Socket, initial: Buffer, length: number, timeoutMs: number): Promise<Buffer> {
  if (initial.length >= length) return Promise.resolve(initial.subarray(length));
  let left = length;
  return read(socket, initial, timeoutMs, (chunk) => {
    if (chunk.length >= left) return chunk.subarray(left);
    left -= chunk.length;
  });
}

/**
 * A socket to the proxy on `proxyPort`; errors are seen by whoever reads next (a tunnel reset by the
 * proxy must not crash the process).
 */
export const connectProxy = (proxyPort: number) =>
  net.connect({ host: '127.0.0.1', port: proxyPort, noDelay: true }).on('error', () => {});

/** Connects to the proxy, asks for a tunnel to `authority` (host:port) and waits for a 2xx. */
export async function openTunnel(proxyPort: number, authority: string, timeoutMs: number): Promise<Tunnel> {
  const socket = connectProxy(proxyPort);
  try {
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
    const head = await readHead(socket, Buffer.alloc(0), timeoutMs);
    if (head.status < 200 || head.status > 299)
      throw new WireError(`status ${head.status || 'unparsed'}`, `CONNECT answered ${head.status}`);
    return { socket, rest: head.rest };
  } catch (e) {
    socket.destroy();
    throw e;
  }
}

/** One keep-alive GET on an open socket (`path` absolute for a forward proxy): status, body size, excess. */
export async function get(socket: net.Socket, initial: Buffer, host: string, path: string, ms: number) {
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
  const head = await readHead(socket, initial, ms);
  if (head.contentLength === null) throw new WireError('protocol', 'answer without content-length');
  const rest = await skipBody(socket, head.rest, head.contentLength, ms);
  return { status: head.status, bodyBytes: head.contentLength, rest };
}
