/*
 * A tunnel through a plain-TCP http:// proxy: the listeners' commonest dial, as one object and one wait.
 *
 *   gateway ──TCP──▶ proxy   CONNECT host:port [+ Proxy-Authorization], written at once (the socket
 *                            holds it until it is connected)
 *           ◀── HTTP/1.1 2xx read where it lies by the socket's own reads (direct-reads.ts): no 'data'
 *                            listener, no copy; reading stops with the answer until the splice
 *
 * Until the answer: one timer (the connect timeout or the call's deadline, whichever is first), one
 * listener on the caller's signal, and the socket's 'error' and 'close'. The https:// proxies' path
 * (http-proxy.ts requestTunnel, under a DialBudget) does the same with a stream listener set, a promise
 * per step and an AbortController; on this path those were ~40% of the JavaScript a tunnel ran before its
 * first byte, in a --cpu-prof of Rota under a load of new tunnels per second.
 */
import type net from 'node:net';
import type { ProxyRecord } from '../pool/types.ts';
import { classifyProxyDialError, connectStatusError } from './classify.ts';
import {
  assertProxyAllowed,
  authority,
  callerLeft,
  type DialerOptions,
  type DialLimits,
  dialExpiry,
  openTcp,
} from './dial.ts';
import { DirectReads } from './direct-reads.ts';
import {
  connectHead,
  MAX_CONNECT_HEAD,
  parseConnectStatus,
  proxyProtocolError,
  stageOf,
} from './http-proxy.ts';
import type { UpstreamError } from './types.ts';

const CRLF2 = Buffer.from('\r\n\r\n', 'latin1');

/** Resolves with the socket once the proxy answered 2xx; rejects with an UpstreamError, the socket closed. */
export function connectPlain(
  record: ProxyRecord,
  target: { readonly hostname: string; readonly port: number },
  auth: string | null,
  opts: DialerOptions,
  limits: DialLimits,
): Promise<net.Socket> {
  assertProxyAllowed(record.host, opts);
  return new Promise((resolve, reject) => {
    const dial = new PlainConnect(limits, resolve, reject);
    if (limits.signal?.aborted) return dial.fail(callerLeft());
    dial.start(record, authority(target.hostname, target.port), auth, opts.connectTimeoutMs);
  });
}

const SETTLED: DialLimits = { deadline: 0 };
const ignore = (): void => {};

class PlainConnect {
  // Let go of once settled: the socket's 'error' listener keeps this object as long as the socket lives
  // (see DirectReads.release for why that matters).
  #limits: DialLimits;
  #resolve: (s: net.Socket) => void;
  #reject: (e: UpstreamError) => void;
  #socket: net.Socket | null = null;
  #timer: NodeJS.Timeout | null = null;
  #settled = false;
  /** Answer bytes of earlier reads, when the head did not come in one. */
  #partial: Buffer | null = null;

  constructor(limits: DialLimits, resolve: (s: net.Socket) => void, reject: (e: UpstreamError) => void) {
    this.#limits = limits;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  start(record: ProxyRecord, where: string, auth: string | null, connectTimeoutMs: number): void {
    const socket = openTcp(record.host, record.port, new DirectReads(this.#read));
    this.#socket = socket;
    socket.on('error', this.#onError);
    socket.once('close', this.#onClose);
    this.#limits.signal?.addEventListener('abort', this.#onAbort, { once: true });
    const expiry = dialExpiry(connectTimeoutMs, this.#limits);
    this.#timer = setTimeout(() => this.fail(expiry.error()), expiry.delayMs);
    this.#timer.unref();
    socket.write(connectHead(where, auth));
  }

  fail(err: UpstreamError): void {
    const reject = this.#reject;
    const socket = this.#socket;
    if (this.#settle()) return;
    socket?.destroy();
    reject(err);
  }

  /** True when it was settled already; otherwise settles and lets go of the timer and the listeners. */
  #settle(): boolean {
    if (this.#settled) return true;
    this.#settled = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#limits.signal?.removeEventListener('abort', this.#onAbort);
    // The 'error' listener stays (it ignores what comes after): the socket is never without one.
    this.#socket?.off('close', this.#onClose);
    this.#socket = null;
    this.#limits = SETTLED;
    this.#partial = null;
    this.#resolve = ignore;
    this.#reject = ignore;
    return false;
  }

  #onError = (err: Error): void => {
    if (!this.#settled) this.fail(classifyProxyDialError(err, stageOf(err)));
  };

  #onClose = (): void => this.fail(classifyProxyDialError(null, 'connect'));

  #onAbort = (): void => this.fail(callerLeft());

  /** DirectReads' handshake reader: the offset where the tunnel's bytes begin once the head is complete. */
  #read = (view: Buffer): number => {
    if (this.#settled) return -1;
    const head = this.#partial === null ? view : Buffer.concat([this.#partial, view]);
    const end = head.indexOf(CRLF2);
    if (end === -1) {
      if (head.length > MAX_CONNECT_HEAD) {
        this.fail(proxyProtocolError('the CONNECT answer head is too large'));
        return -1;
      }
      // `view` is shared memory (direct-reads.ts): what is kept must be a copy.
      this.#partial = head === view ? Buffer.from(view) : head;
      return -1;
    }
    const status = parseConnectStatus(head);
    if (status === null) {
      this.fail(proxyProtocolError('the proxy answered CONNECT with something that is not HTTP'));
      return -1;
    }
    if (status < 200 || status > 299) {
      this.fail(connectStatusError(status));
      return -1;
    }
    const socket = this.#socket;
    const resolve = this.#resolve;
    if (socket === null || this.#settle()) return -1;
    resolve(socket);
    // Offset in this read's view (the earlier reads' bytes were all head).
    return end + 4 - (head.length - view.length);
  };
}
