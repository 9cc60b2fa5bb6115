import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { type AttemptPhase, classifySendError } from './classify.ts';
import { forwardedHeaders, objectPairs } from './forwarded-headers.ts';
import type { ProxyDispatcher } from './proxy-dispatcher.ts';
import { UpstreamError, type UpstreamRequest, type UpstreamResponse } from './types.ts';

/**
 * One attempt through one proxy's dispatcher: no retry, no redirect following (a 3xx comes back as
 * is), the response read into a Buffer with a hard cap, every failure an UpstreamError.
 */

/** Hop-by-hop headers (RFC 9110 7.6.1) and the client's proxy credentials: they never travel on. */
export const HOP_BY_HOP: readonly string[] = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];

/**
 * The caller's headers in its order and spelling (forwarded-headers.ts), without hop-by-hop ones,
 * Proxy-*, X-Rota-*, Expect (undici refuses it) and Content-Length (undici sets it from the body). Host
 * keeps its place but not its value: the target URL decides it (a caller-chosen Host would reach other
 * virtual hosts).
 */
export function outboundHeaders(headers: Readonly<Record<string, string>>): string[] {
  return forwardedHeaders(objectPairs(headers), { dropContentLength: true });
}

/**
 * Whether a header name is in Rota's own namespace (X-Rota-*). One from a target or an upstream proxy
 * never reaches a client, so that every X-Rota-* a client reads is Rota's. Node and undici give names in
 * lowercase: one character compared for almost every header.
 */
export function isRotaHeader(name: string): boolean {
  const c = name.charCodeAt(0);
  if (c === 120) return name.startsWith('x-rota-');
  return c === 88 && name.toLowerCase().startsWith('x-rota-');
}

/**
 * The answer's headers without undefined values and without X-Rota-*. Object.keys, not entries: no pair
 * array per header.
 */
function responseHeaders(h: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const k of Object.keys(h)) {
    const v = h[k];
    if (v !== undefined && !isRotaHeader(k)) out[k] = v;
  }
  return out;
}

function tooLarge(limit: number): UpstreamError {
  return new UpstreamError('response_too_large', `the response is larger than ${limit} bytes`, {
    mayHaveReachedTarget: true,
  });
}

function deadlineError(phase: AttemptPhase): UpstreamError {
  if (phase === 'queued') {
    // Still queued inside undici (every connection to this proxy busy): Rota's own queue, not a proxy
    // fault. A proxy that cannot be reached fails in the dialer, within the connect timeout, instead.
    return new UpstreamError(
      'queue_timeout',
      'deadline reached before the request could be sent through the proxy',
      {
        mayHaveReachedTarget: false,
      },
    );
  }
  if (phase === 'sent') {
    return new UpstreamError('timeout', 'deadline reached before the target answered', {
      mayHaveReachedTarget: true,
    });
  }
  return new UpstreamError('response_timeout', 'deadline reached while the response body was arriving', {
    mayHaveReachedTarget: true,
  });
}

function callerAbort(phase: AttemptPhase): UpstreamError {
  return new UpstreamError('aborted', 'the caller abandoned the request', {
    mayHaveReachedTarget: phase !== 'queued',
  });
}

/** Tracks one attempt; settles exactly once and aborts the undici request when it fails early. */
class Attempt implements Dispatcher.DispatchHandler {
  phase: AttemptPhase = 'queued';
  #controller: Dispatcher.DispatchController | null = null;
  #failure: UpstreamError | null = null;
  #settled = false;
  #status = 0;
  #headers: Record<string, string | string[]> = {};
  #chunks: Buffer[] = [];
  #size = 0;
  /** Told when the target's answer starts (UpstreamRequest.onResponseStart). */
  onStart: (() => void) | undefined = undefined;
  readonly #limit: number;
  readonly #head: boolean;
  readonly #resolve: (r: UpstreamResponse) => void;
  readonly #reject: (e: UpstreamError) => void;

  constructor(
    limit: number,
    head: boolean,
    resolve: (r: UpstreamResponse) => void,
    reject: (e: UpstreamError) => void,
  ) {
    this.#limit = limit;
    this.#head = head;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  get settled(): boolean {
    return this.#settled;
  }

  fail(err: UpstreamError): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#failure = err;
    this.#chunks = [];
    this.#reject(err);
    if (this.#controller && !this.#controller.aborted) this.#controller.abort(err);
  }

  onRequestStart(controller: Dispatcher.DispatchController, _context: unknown): void {
    this.#controller = controller;
    // Settled while still queued (deadline, caller): the request must not go out late.
    if (this.#failure) controller.abort(this.#failure);
    else this.phase = 'sent';
  }

  onResponseStart(_c: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders): void {
    this.phase = 'receiving';
    this.onStart?.();
    this.#status = status;
    this.#headers = responseHeaders(headers);
    const declared = Number(headers['content-length']);
    if (!this.#head && Number.isFinite(declared) && declared > this.#limit) this.fail(tooLarge(this.#limit));
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    if (this.#size + chunk.length > this.#limit) {
      this.fail(tooLarge(this.#limit));
      return;
    }
    this.#size += chunk.length;
    this.#chunks.push(chunk);
  }

  onResponseEnd(): void {
    if (this.#settled) return;
    this.#settled = true;
    const body = Buffer.concat(this.#chunks, this.#size);
    this.#chunks = [];
    const response = { statusCode: this.#status, headers: this.#headers, body };
    // With pipelining 1, undici frees the connection in a setImmediate queued right after this callback
    // (then a drain microtask). Settling one check phase later lets a caller that sends its next request
    // at once find the connection free, instead of opening a second one. Costs one loop turn.
    setImmediate(() => setImmediate(() => this.#resolve(response)));
  }

  onResponseError(_c: Dispatcher.DispatchController | null, err: Error): void {
    this.fail(classifySendError(err, this.phase));
  }
}

export function send(dispatcher: ProxyDispatcher, req: UpstreamRequest): Promise<UpstreamResponse> {
  const remaining = req.deadline - performance.now();
  if (remaining <= 0) return Promise.reject(deadlineError('queued'));
  if (req.signal?.aborted) return Promise.reject(callerAbort('queued'));
  if (req.url.protocol !== 'http:' && req.url.protocol !== 'https:') {
    return Promise.reject(
      new UpstreamError('invalid_request', 'only http and https targets are supported', {
        mayHaveReachedTarget: false,
      }),
    );
  }
  return new Promise<UpstreamResponse>((resolve, reject) => {
    const onAbort = () => attempt.fail(callerAbort(attempt.phase));
    // Whole milliseconds, as in stream.ts: one Node timer list for them all.
    const timer = setTimeout(() => attempt.fail(deadlineError(attempt.phase)), Math.ceil(remaining));
    const done = () => {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
    };
    const attempt = new Attempt(
      req.maxResponseBytes,
      req.method.toUpperCase() === 'HEAD',
      (r) => {
        done();
        resolve(r);
      },
      (e) => {
        done();
        reject(e);
      },
    );
    attempt.onStart = req.onResponseStart;
    req.signal?.addEventListener('abort', onAbort, { once: true });
    // undici's own timers are only a safety net behind the deadline above.
    const safety = Math.ceil(remaining) + 1_000;
    try {
      dispatcher.dispatch(
        {
          origin: req.url.origin,
          path: `${req.url.pathname}${req.url.search}`,
          method: req.method.toUpperCase(),
          headers: outboundHeaders(req.headers),
          body: req.body,
          headersTimeout: safety,
          bodyTimeout: safety,
        },
        attempt,
      );
    } catch (err) {
      attempt.fail(classifySendError(err, 'queued'));
    }
  });
}
