/*
 * One streamed request through one proxy's dispatcher, for the HTTP listener's absolute-URI door.
 *
 *   client ──body──▶ LazyBody ──▶ undici dispatcher of the proxy ──▶ proxy ──▶ target
 *   client ◀──body── StreamedResponse.body (response-body.ts: written into the client's response)
 *
 * Unlike send() (send.ts) nothing is buffered whole and nothing is capped: the promise settles as soon
 * as the answer's head is in, and the body flows on with backpressure both ways. The deadline covers
 * the head only; a body that stalls for `idleTimeoutMs` is cut.
 */

import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { CallerSignal } from '../lib/abort.ts';
import { type AttemptPhase, classifySendError } from './classify.ts';
import type { ProxyDispatcher } from './proxy-dispatcher.ts';
import { ResponseBody } from './response-body.ts';
import { UpstreamError } from './types.ts';

export interface StreamedRequest {
  /** The target's origin (only `origin` is read). */
  readonly origin: URL;
  /** Path and query, sent as given. */
  readonly path: string;
  readonly method: string;
  /**
   * Name/value pairs in the client's order and spelling, already free of hop-by-hop and proxy headers,
   * Host and Connection as slots (forwarded-headers.ts): undici writes them as given.
   */
  readonly headers: string[];
  /** The client's request body, read only when the proxy connection takes it; null: none. */
  readonly body: Readable | null;
  /** Told the size of each body chunk as it leaves (metrics). */
  readonly onBodyBytes?: ((n: number) => void) | undefined;
  /** A body silent for this long (either way) is cut. */
  readonly idleTimeoutMs: number;
}

/**
 * What changes from one attempt to the next, apart from the request: given beside it rather than copied
 * into it, so that an attempt costs no copy of the request.
 */
export interface StreamLimits {
  /** Monotonic ms by which the answer's head is due. */
  readonly deadline: number;
  readonly signal?: CallerSignal | undefined;
  readonly onResponseStart?: (() => void) | undefined;
}

export interface StreamedResponse {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  /** Written into the client's response with pipeTo(); destroying it aborts the upstream request. */
  readonly body: ResponseBody;
}

/**
 * A per-attempt view of the client's body. undici destroys a body it could not send; this wrapper takes
 * that, not the client's stream, so a failover attempt can still read it when nothing was read yet.
 */
class LazyBody extends Readable {
  started = false;
  readonly #src: Readable;
  #attached = false;
  readonly #count: ((n: number) => void) | undefined;
  readonly #onData = (chunk: Buffer) => {
    this.started = true;
    this.#count?.(chunk.length);
    if (!this.push(chunk)) this.#src.pause();
  };
  readonly #onEnd = () => this.push(null);
  readonly #onError = (err: Error) => this.destroy(err);

  constructor(src: Readable, count?: (n: number) => void) {
    super();
    this.#src = src;
    this.#count = count;
  }

  override _read(): void {
    if (!this.#attached) {
      this.#attached = true;
      this.#src.on('data', this.#onData);
      this.#src.once('end', this.#onEnd);
      this.#src.once('error', this.#onError);
    }
    this.#src.resume();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.#src.off('data', this.#onData);
    this.#src.off('end', this.#onEnd);
    this.#src.off('error', this.#onError);
    this.#src.pause();
    cb(err);
  }
}

function deadlineError(phase: AttemptPhase): UpstreamError {
  if (phase === 'queued') {
    return new UpstreamError('queue_timeout', 'deadline reached before the request could be sent', {
      mayHaveReachedTarget: false,
    });
  }
  return new UpstreamError('timeout', 'deadline reached before the target answered', {
    mayHaveReachedTarget: true,
  });
}

/** Settles once with the head (or an error); after that, errors end the body stream. */
class StreamAttempt implements Dispatcher.DispatchHandler {
  phase: AttemptPhase = 'queued';
  #controller: Dispatcher.DispatchController | null = null;
  #body: ResponseBody | null = null;
  #failure: UpstreamError | null = null;
  readonly #lazy: LazyBody | null;
  readonly #resolve: (r: StreamedResponse) => void;
  readonly #reject: (e: UpstreamError) => void;
  onStart: (() => void) | undefined;

  constructor(
    lazy: LazyBody | null,
    resolve: (r: StreamedResponse) => void,
    reject: (e: UpstreamError) => void,
  ) {
    this.#lazy = lazy;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  get settled(): boolean {
    return this.#body !== null || this.#failure !== null;
  }

  /** Fails before the head came; a body already read from the client cannot be sent again. */
  fail(err: UpstreamError): void {
    if (this.settled) return;
    const e =
      this.#lazy?.started && !err.mayHaveReachedTarget
        ? new UpstreamError(err.kind, err.message, { mayHaveReachedTarget: true, cause: err.cause })
        : err;
    this.#failure = e;
    this.#lazy?.destroy();
    this.#reject(e);
    if (this.#controller && !this.#controller.aborted) this.#controller.abort(e);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#failure) controller.abort(this.#failure);
    else this.phase = 'sent';
  }

  onResponseStart(c: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders): void {
    if (this.settled) return;
    this.phase = 'receiving';
    this.onStart?.();
    const body = new ResponseBody(c);
    this.#body = body;
    // undici's own parsed object, not copied: the listener filters it into the client's answer.
    this.#resolve({ statusCode: status, headers, body });
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#body?.push(chunk);
  }

  onResponseEnd(): void {
    this.#body?.end();
  }

  onResponseError(_c: Dispatcher.DispatchController | null, err: Error): void {
    if (this.#body) {
      this.#body.fail();
      return;
    }
    this.fail(classifySendError(err, this.phase));
  }
}

export function stream(
  dispatcher: ProxyDispatcher,
  req: StreamedRequest,
  limits: StreamLimits,
): Promise<StreamedResponse> {
  const remaining = limits.deadline - performance.now();
  if (remaining <= 0) return Promise.reject(deadlineError('queued'));
  const signal = limits.signal;
  if (signal?.aborted) {
    return Promise.reject(new UpstreamError('aborted', 'the caller left', { mayHaveReachedTarget: false }));
  }
  const lazy = req.body ? new LazyBody(req.body, req.onBodyBytes) : null;
  return new Promise<StreamedResponse>((resolve, reject) => {
    const onAbort = () =>
      attempt.fail(
        new UpstreamError('aborted', 'the caller left', { mayHaveReachedTarget: attempt.phase !== 'queued' }),
      );
    // Whole milliseconds: Node keeps one list of timers per distinct duration, so a fractional one made a
    // list (and a priority-queue entry) per request.
    const timer = setTimeout(() => attempt.fail(deadlineError(attempt.phase)), Math.ceil(remaining));
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const attempt = new StreamAttempt(
      lazy,
      (r) => {
        done();
        resolve(r);
      },
      (e) => {
        done();
        reject(e);
      },
    );
    attempt.onStart = limits.onResponseStart;
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      dispatcher.dispatch(
        {
          // The parsed URL itself: the http proxies' dispatcher reads its cached strings (absolute-form.ts).
          origin: req.origin,
          path: req.path,
          method: req.method,
          headers: req.headers,
          body: lazy,
          headersTimeout: Math.ceil(remaining) + 1_000,
          bodyTimeout: req.idleTimeoutMs,
        },
        attempt,
      );
    } catch (err) {
      attempt.fail(classifySendError(err, 'queued'));
    }
  });
}
