import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/** How long a refused request's body is still read, and dropped, after the answer. */
export const LINGER_MS = 2_000;
/** How many more bytes of it are read at most. */
export const LINGER_BYTES = 16 * 1024 * 1024;
/** How often the byte count is looked at while lingering. */
const LINGER_CHECK_MS = 100;

export interface LingerBounds {
  readonly ms: number;
  readonly bytes: number;
}

/**
 * For an answer with `Connection: close` given before the request's body has all arrived (a 413 over the
 * body limit, a 415): node:http closes the socket as soon as the answer is written. The client is still
 * sending, and bytes arriving at a closed socket make the kernel send a reset, which can discard the
 * answer before the client reads it (it sees EPIPE or ECONNRESET instead of the 413). Instead the answer
 * is followed by a FIN alone, and the rest of the body is read and dropped until it ends, or for at most
 * `bounds.ms`, or `bounds.bytes` more; then the socket closes.
 *
 * Node's server ends such a connection through the socket's destroySoon(); it is replaced on this one
 * socket only.
 */
export function lingerOnClose(req: IncomingMessage, bounds: LingerBounds = DEFAULT_BOUNDS): void {
  if (req.complete) return;
  const socket = req.socket as Socket;
  socket.destroySoon = () => linger(socket, req, bounds);
}

const DEFAULT_BOUNDS: LingerBounds = { ms: LINGER_MS, bytes: LINGER_BYTES };

function linger(socket: Socket, req: IncomingMessage, bounds: LingerBounds): void {
  socket.end();
  // node:http drops the rest of a body nobody reads (dumped request), or a reader that stopped left it
  // flowing; resume() makes sure of either.
  req.resume();
  const started = Date.now();
  const maxRead = socket.bytesRead + bounds.bytes;
  const check = setInterval(() => {
    if (Date.now() - started >= bounds.ms || socket.bytesRead > maxRead) socket.destroy();
  }, LINGER_CHECK_MS);
  check.unref();
  socket.once('close', () => clearInterval(check));
  // The body is all in: nothing more will arrive to be reset, so the socket closes once the answer has
  // been handed to the kernel.
  const done = () => {
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  };
  if (req.complete) done();
  else req.once('end', done);
}
