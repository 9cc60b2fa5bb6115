import type net from 'node:net';
import {
  type ConnectionCaps,
  type Door,
  type Held,
  type Peer,
  peerKey,
  type RefusalReason,
} from './connection-caps.ts';

/** Where a socket keeps what the caps counted it as, for its one shared 'close' listener. */
const HELD = Symbol('rota.held');
type HeldSocket = net.Socket & { [HELD]?: Held };

/*
 * The caps of connection-caps.ts put in front of a server's own 'connection' handling.
 *
 *   accept ──▶ guard ──admitted──▶ the server's own listeners (node:http's parser, the SOCKS5 state machine)
 *                │ refused
 *                ├─ a door with an answer: wait ≤ REFUSE_WAIT_MS for the first bytes (the request head),
 *                │  write the answer, close; more than MAX_ANSWERING such waits at once: close at once
 *                └─ otherwise: close at once
 *
 * A refused socket never reaches the server: no parser, no state, one descriptor for at most
 * REFUSE_WAIT_MS. The guard also listens for the server's accept errors (EMFILE, ENFILE when the process
 * or the system is out of descriptors): without a listener, Node throws them and the process exits.
 */

/** How long a refused connection on an HTTP port may take to send its head before it is just closed. */
export const REFUSE_WAIT_MS = 500;
/** Refused connections waiting for their head at once, all doors together. */
export const MAX_ANSWERING = 64;
/** Log events of one type at most this often (a flood must not become a flood of log lines). */
const NOTICE_EVERY_MS = 10_000;

export type GuardEvent =
  | {
      readonly type: 'refused';
      readonly door: Door;
      readonly reason: RefusalReason;
      readonly address: string;
      /** Events of this type not reported since the last one. */
      readonly suppressed: number;
    }
  | { readonly type: 'accept_error'; readonly code: string; readonly suppressed: number };

export interface DoorOptions {
  readonly door: Door;
  /** The bytes a refused connection is answered with, once its first bytes arrived; none: closed at once. */
  readonly answer?: () => string;
}

type Listener = (socket: net.Socket) => void;
const ignore = () => {};

export class ConnectionGuard {
  readonly caps: ConnectionCaps;
  readonly #notify: (e: GuardEvent) => void;
  readonly #lastNotice: Record<GuardEvent['type'], { at: number; suppressed: number }> = {
    refused: { at: -Infinity, suppressed: 0 },
    accept_error: { at: -Infinity, suppressed: 0 },
  };
  #answering = 0;

  constructor(caps: ConnectionCaps, notify: (e: GuardEvent) => void = ignore) {
    this.caps = caps;
    this.#notify = notify;
  }

  /** Refused connections waiting for their head now. */
  get answering(): number {
    return this.#answering;
  }

  /**
   * Puts the caps in front of `server`'s 'connection' listeners. Call it once the server is built and
   * before it listens: listeners added afterwards see every connection, refused ones included.
   */
  guard(server: net.Server, o: DoorOptions): void {
    const inner = server.listeners('connection') as Listener[];
    server.removeAllListeners('connection');
    const caps = this.caps;
    // One function for every connection of this server: the socket carries what it released.
    const release = function (this: HeldSocket) {
      const held = this[HELD];
      if (held !== undefined) caps.releaseHeld(held);
    };
    server.on('connection', (socket: HeldSocket) => {
      const held = caps.admitHeld(socket, o.door);
      if ('type' in held) {
        this.#noticeRefusal(o.door, held.type === 'refused' ? held.reason : 'total', socket);
        this.#refuse(socket, o);
        return;
      }
      socket[HELD] = held;
      socket.on('close', release);
      for (const l of inner) l.call(server, socket);
    });
    server.on('error', (err: NodeJS.ErrnoException) => {
      if (err.syscall === 'accept') this.#notice({ type: 'accept_error', code: err.code ?? 'unknown' });
    });
  }

  #refuse(socket: net.Socket, o: DoorOptions): void {
    socket.on('error', ignore);
    const answer = o.answer;
    if (answer === undefined || this.#answering >= MAX_ANSWERING) {
      socket.destroy();
      return;
    }
    this.#answering++;
    const timer = setTimeout(() => socket.destroy(), REFUSE_WAIT_MS);
    timer.unref();
    socket.once('data', () => {
      socket.write(answer(), () => socket.destroy());
    });
    socket.once('close', () => {
      clearTimeout(timer);
      this.#answering--;
    });
  }

  #noticeRefusal(door: Door, reason: RefusalReason, peer: Peer): void {
    const last = this.#lastNotice.refused;
    // Cheap way out first: nearly every refusal of a flood lands here.
    if (performance.now() - last.at < NOTICE_EVERY_MS) {
      last.suppressed++;
      return;
    }
    this.#notice({ type: 'refused', door, reason, address: peerKey(peer.remoteAddress ?? 'unknown') });
  }

  #notice(e: DistributiveOmit<GuardEvent, 'suppressed'>): void {
    const last = this.#lastNotice[e.type];
    const now = performance.now();
    if (now - last.at < NOTICE_EVERY_MS) {
      last.suppressed++;
      return;
    }
    const suppressed = last.suppressed;
    last.at = now;
    last.suppressed = 0;
    this.#notify({ ...e, suppressed } as GuardEvent);
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
