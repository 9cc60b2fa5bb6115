import type net from 'node:net';
import type { Writable } from 'node:stream';

/**
 * Reads of an upstream tunnel socket into memory of our own (net's `onread`), so that a tunnel carrying
 * a download costs no allocation per chunk.
 *
 *   handshake:  kernel ──read──▶ SCRATCH ──▶ the handshake's reader (the CONNECT answer parsed where it
 *                                            lies); reading stops once it is complete, tunnel bytes that
 *                                            came with it go to the socket's readable buffer (copied)
 *   held:       (until the splice, or for anyone who reads the socket as a plain one) reads are copied
 *               ──▶ socket.push(), as Node's own reads would be
 *   relay:      kernel ──read──▶ SCRATCH ──copy──▶ client.write()          small reads
 *               kernel ──read──▶ own 64 KiB ─────▶ client.write()          a full read made the tunnel busy:
 *                                  │                                       no copy, and reading waits
 *                                  └── until the client socket has taken the bytes ──┘
 *
 * Why: with Node's own reads every chunk is a new 64 KiB ArrayBuffer. A tunnel at several hundred MB/s
 * made ten of them per megabyte and V8 ran a full mark-compact about every 64 MB of them ("GC in old
 * space requested", ~10 a second, seen with --trace-gc), about a sixth of the gateway's CPU with the
 * allocations besides. Measured with the bench's bulk load (64 MiB downloads through one tunnel via
 * squid): Rota's CPU per download 83-95 → 31-42 ms, 550-610 → 780-960 MiB/s.
 *
 * SCRATCH is shared by every socket in this process: it is safe because what is read into it is copied
 * out before the callback returns. A socket's own buffer is taken only after a read filled the scratch
 * (a busy tunnel), so thousands of idle tunnels hold no memory of their own; it goes back to a small
 * free list when a read into it is short again (the tunnel went quiet) and its bytes are written.
 * (An own buffer of 256 KiB instead of 64 measured the same within the noise: 64 kept.)
 */
const SIZE = 64 * 1024;
const SCRATCH = Buffer.allocUnsafe(SIZE);
/** A read at least this long into a busy tunnel's own buffer keeps it busy. */
const BUSY_READ = 16 * 1024;
const FREE: Buffer[] = [];
const FREE_MAX = 16;

/**
 * The DirectReads of a tunnel socket that has them (only plain TCP sockets dialled for a tunnel do), kept
 * on the socket itself: a WeakMap entry per tunnel cost ~2 µs to add and made every GC trace it.
 */
const READS = Symbol('rota.directReads');
type Marked = { [READS]?: DirectReads };

export function directReadsOf(socket: object): DirectReads | undefined {
  return (socket as Marked)[READS];
}

export interface OnRead {
  readonly buffer: () => Buffer;
  readonly callback: (bytes: number, buf: Buffer) => boolean;
}

/**
 * What a handshake makes of bytes read before the tunnel is spliced (`view` is valid only during the
 * call): -1 while more are needed (the reader keeps what it needs of them), else the offset in `view`
 * where the tunnel's own bytes begin.
 */
export type HandshakeReader = (view: Buffer) => number;

type Mode =
  | { readonly kind: 'handshake'; readonly read: HandshakeReader }
  /** The handshake is done: the socket reads as a plain one until the splice. */
  | { readonly kind: 'held' }
  /** The tunnel is over: nothing is read or kept any more. */
  | { readonly kind: 'released' }
  | { readonly kind: 'relay'; readonly client: Writable; paused: boolean };

const HELD: Mode = { kind: 'held' };
const RELEASED: Mode = { kind: 'released' };

export class DirectReads {
  #socket: net.Socket | null = null;
  #mode: Mode;
  /** The socket's next read goes here: SCRATCH, or #own while the tunnel is busy. */
  #next: Buffer = SCRATCH;
  #own: Buffer | null = null;
  /** A chunk of #own is being written: reading waits (nothing may be read into it until it is). */
  #ownPending = false;

  /** For `net.connect({ ..., onread })`. */
  readonly onread: OnRead = {
    buffer: () => this.#next,
    callback: (bytes, buf) => this.#deliver(bytes, buf),
  };

  constructor(handshake: HandshakeReader) {
    this.#mode = { kind: 'handshake', read: handshake };
  }

  /** Whether the tunnel holds a buffer of its own (it was busy lately). */
  get holdsBuffer(): boolean {
    return this.#own !== null;
  }

  attach(socket: net.Socket): void {
    this.#socket = socket;
    (socket as Marked)[READS] = this;
  }

  /**
   * From now on the socket's bytes go straight to `client`, with backpressure. Anything already in the
   * socket's readable buffer (tunnel bytes that came with the end of the handshake) goes first.
   */
  relayTo(client: Writable): void {
    const socket = this.#socket;
    if (socket === null) throw new Error('DirectReads.relayTo before attach');
    this.#mode = { kind: 'relay', client, paused: false };
    for (let chunk = socket.read() as Buffer | null; chunk !== null; chunk = socket.read() as Buffer | null)
      client.write(chunk);
    // Ends as pipe() would: the upstream's FIN ends the client's side once written (at once if the
    // upstream had already finished before the tunnel was spliced).
    if (socket.readableEnded) client.end();
    else socket.once('end', () => client.end());
    socket.resume();
  }

  /**
   * The tunnel is over: its own buffer goes back to the free list and nothing of the tunnel stays
   * reachable from here. A closed socket (and all it reaches: these reads, the client they wrote to)
   * can outlive its tunnel by a few young-generation collections, and whatever it reaches is copied at
   * each of them and then promoted; the less it reaches, the less the collector copies.
   */
  release(): void {
    const own = this.#own;
    this.#own = null;
    this.#next = SCRATCH;
    this.#socket = null;
    this.#mode = RELEASED;
    // Only when no write still holds it (a write's callback would otherwise return it twice).
    if (own !== null && !this.#ownPending && FREE.length < FREE_MAX) FREE.push(own);
  }

  #resume = (): void => {
    const mode = this.#mode;
    if (mode.kind !== 'relay' || !mode.paused || this.#ownPending) return;
    mode.paused = false;
    this.#socket?.resume();
  };

  /** Write callback of a chunk of #own (for a write done at once it comes a tick later: ignored). */
  #ownWritten = (): void => {
    if (!this.#ownPending) return;
    this.#ownPending = false;
    this.#afterOwn();
    this.#resume();
  };

  /** #own is free again: keep it while the tunnel is busy, give it back once quiet. */
  #afterOwn(): void {
    if (this.#next === this.#own) return;
    const own = this.#own;
    this.#own = null;
    const mode = this.#mode;
    if (own !== null && FREE.length < FREE_MAX && mode.kind === 'relay' && !mode.client.destroyed)
      FREE.push(own);
  }

  #deliver(bytes: number, buf: Buffer): boolean {
    const socket = this.#socket;
    if (socket === null || socket.destroyed) return false;
    const mode = this.#mode;
    if (mode.kind === 'handshake') return this.#handshake(mode.read, socket, buf, bytes);
    if (mode.kind === 'released') return false;
    if (mode.kind === 'held') return socket.push(Buffer.copyBytesFrom(buf, 0, bytes));
    const own = buf !== SCRATCH;
    // A full read of the scratch makes the tunnel busy (its own buffer next); it stays busy while reads
    // into its own buffer are not short (a busy sender rarely fills it exactly), else quiet (the scratch).
    if (own ? bytes >= BUSY_READ : bytes === buf.length) {
      this.#own ??= FREE.pop() ?? Buffer.allocUnsafe(SIZE);
      this.#next = this.#own;
    } else this.#next = SCRATCH;
    if (!own) return this.#write(mode, Buffer.copyBytesFrom(buf, 0, bytes), undefined);
    const ok = this.#write(mode, buf.subarray(0, bytes), this.#ownWritten);
    if (mode.client.writableLength > 0) {
      this.#ownPending = true;
      mode.paused = true;
      return false;
    }
    this.#afterOwn();
    return ok;
  }

  /** False (reading stops) once the handshake's reader has the whole answer, or failed and closed the socket. */
  #handshake(read: HandshakeReader, socket: net.Socket, buf: Buffer, bytes: number): boolean {
    const at = read(buf.subarray(0, bytes));
    if (at < 0) return !socket.destroyed;
    this.#mode = HELD;
    // Rare (the client speaks first in most tunnels): no listener reads them before the splice does.
    if (at < bytes) socket.push(Buffer.copyBytesFrom(buf, at, bytes - at));
    return false;
  }

  /** Writes a chunk; false (reading paused until 'drain') when the client's buffer is full. */
  #write(mode: Mode & { kind: 'relay' }, chunk: Buffer, cb: (() => void) | undefined): boolean {
    if (mode.client.write(chunk, cb)) return true;
    mode.paused = true;
    mode.client.once('drain', this.#resume);
    return false;
  }
}
