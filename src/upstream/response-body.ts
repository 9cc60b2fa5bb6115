/*
 * The body of a streamed answer (stream.ts), written straight into the listener's response.
 *
 *   proxy connection ──undici handler──▶ ResponseBody ──write()──▶ sink (the client's ServerResponse)
 *                    ◀──pause/resume────              ◀──'drain'──
 *
 * Why not a Readable between the two: measured on the absolute-URI GET path (perf stat, instructions per
 * call), a Readable and a pump (push, emitReadable on the next tick, 'data' and 'end' events, the end
 * on another tick) cost more than everything else Rota does for a small answer but the engine; writing
 * each chunk into the sink as undici hands it over is what `Pool.stream()` does too.
 *
 * The answer's head settles the attempt before anyone has a sink to give: chunks that arrive meanwhile
 * (undici parses a small answer's head, body and end from one read) wait here, and the proxy
 * connection is paused once more than HOLD_BYTES wait.
 */
import type { Dispatcher } from 'undici';
import { UpstreamError } from './types.ts';

/** What a body is written into: a ServerResponse fits. */
export interface BodySink {
  write(chunk: Buffer): boolean;
  end(): void;
  destroy(): void;
  once(event: 'drain', listener: () => void): unknown;
}

/** Told when the sink's reader has gone before the end (the door's CallerGone: lib/abort.ts). */
export interface SinkGone {
  addEventListener(type: 'abort', listener: () => void): void;
}

/**
 * `receiving`: chunks still arrive; `ended`: the proxy sent the whole body; `failed`: its connection broke
 * (or the body went idle) before the end; `abandoned`: destroyed by Rota (nobody reads it).
 */
type BodyState = 'receiving' | 'ended' | 'failed' | 'abandoned';

/** Held before a sink is attached; beyond it the proxy connection pauses. */
const HOLD_BYTES = 64 * 1024;

export class ResponseBody {
  readonly #controller: Dispatcher.DispatchController;
  #state: BodyState = 'receiving';
  #sink: BodySink | null = null;
  #held: Buffer[] = [];
  #heldBytes = 0;
  #bytes = 0;
  #onDone: ((bytes: number) => void) | null = null;
  /** A 'drain' listener is on the sink (added only when a write is refused, once until it comes). */
  #awaitingDrain = false;

  constructor(controller: Dispatcher.DispatchController) {
    this.#controller = controller;
  }

  /**
   * Writes the body into `sink`, with backpressure, and calls `done` once with the bytes written when
   * it ends, fails, or the sink's reader goes first (`gone`, which aborts the upstream request at once).
   *
   * No listener is added to the sink for the common small answer: `gone` is the door's own signal (one
   * listener on the response's 'close' serves both), and 'drain' is listened for only once a write is
   * refused. A --cpu-prof of the GET path had the response's listeners (an array once there were two
   * for 'close') among the door's costs.
   */
  pipeTo(sink: BodySink, done: (bytes: number) => void, gone: SinkGone): void {
    if (this.#sink !== null) throw new Error('the body already has a sink');
    this.#sink = sink;
    this.#onDone = done;
    gone.addEventListener('abort', () => {
      if (this.#state === 'receiving') this.destroy();
      this.#finish();
    });
    let open = true;
    for (const chunk of this.#held) open = this.#write(sink, chunk);
    this.#held = [];
    this.#heldBytes = 0;
    this.#settleSink(sink);
    if (open && this.#state === 'receiving') this.#resume();
  }

  /** Nobody will read it: the upstream request is aborted (a no-op once the body ended). */
  destroy(): void {
    this.#held = [];
    if (this.#state !== 'receiving') return;
    this.#state = 'abandoned';
    if (!this.#controller.aborted) {
      this.#controller.abort(
        new UpstreamError('aborted', 'the answer was abandoned', { mayHaveReachedTarget: true }),
      );
    }
    this.#sink?.destroy();
  }

  /** A chunk from the proxy (the undici handler's onResponseData). */
  push(chunk: Buffer): void {
    if (this.#state !== 'receiving') return;
    const sink = this.#sink;
    if (sink !== null) {
      if (!this.#write(sink, chunk)) this.#controller.pause();
      return;
    }
    this.#held.push(chunk);
    this.#heldBytes += chunk.length;
    if (this.#heldBytes > HOLD_BYTES) this.#controller.pause();
  }

  /** The whole body arrived. */
  end(): void {
    if (this.#state !== 'receiving') return;
    this.#state = 'ended';
    if (this.#sink !== null) this.#settleSink(this.#sink);
  }

  /** The proxy connection failed (or went idle) before the end: the client's answer is cut. */
  fail(): void {
    if (this.#state !== 'receiving') return;
    this.#state = 'failed';
    if (this.#sink !== null) this.#settleSink(this.#sink);
  }

  /** Writes a chunk; false (a 'drain' is awaited) when the sink wants no more for now. */
  #write(sink: BodySink, chunk: Buffer): boolean {
    this.#bytes += chunk.length;
    if (sink.write(chunk)) return true;
    if (!this.#awaitingDrain) {
      this.#awaitingDrain = true;
      sink.once('drain', this.#drained);
    }
    return false;
  }

  readonly #drained = (): void => {
    this.#awaitingDrain = false;
    this.#resume();
  };

  /** Passes an end or a failure on to the sink once it has every held chunk. */
  #settleSink(sink: BodySink): void {
    if (this.#state === 'ended') {
      sink.end();
      this.#finish();
    } else if (this.#state === 'failed') {
      sink.destroy();
      this.#finish();
    }
  }

  #resume(): void {
    if (this.#state === 'receiving' && this.#controller.paused) this.#controller.resume();
  }

  #finish(): void {
    const done = this.#onDone;
    this.#onDone = null;
    done?.(this.#bytes);
  }
}
