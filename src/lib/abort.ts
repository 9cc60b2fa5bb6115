/**
 * Shared, frozen abort reasons for signals that are aborted on every call.
 *
 * Why: `AbortController.abort()` without a reason makes a DOMException, and an Error captures its
 * stack when it is made. Every tunnel's client closes in the end, and every call releases its winning
 * attempt, so those aborts ran once per call: DOMException was among the largest costs of the CONNECT
 * path in a --cpu-prof (with an UpstreamError made per tunnel for a deadline that almost never passes).
 * Nothing reads these reasons' stacks: code checks `signal.aborted`, and errors meant for a caller are
 * made where they are thrown.
 */
export const CLIENT_GONE: Error = Object.freeze(new Error('the client closed the connection'));
export const ATTEMPT_RELEASED: Error = Object.freeze(new Error('the call no longer needs this attempt'));

/**
 * What the engine asks of a caller's signal (executor, attempts, dials): an AbortSignal has all of it, and
 * so has CallerGone, the doors' lighter one.
 */
export interface CallerSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * A caller's signal without EventTarget: a flag, a reason and a short list of listeners, each called once
 * when it aborts (a listener added after that is not called, as for an AbortSignal).
 *
 * Why: a door makes one per request or tunnel, and an AbortController with its signal, an EventTarget
 * whose listeners are kept in a map of lists, and whose add/removeEventListener go through option
 * parsing, was with its garbage 3-7% of the CPU of an absolute-URI GET through the listener (two
 * interleaved A/Bs of the two builds, wrk at 50 connections, CPU per call from /proc). Nothing on these
 * paths needs an event object or a real
 * AbortSignal; the dials that hand one to a library make their own (upstream/dial.ts DialBudget).
 */
export class CallerGone implements CallerSignal {
  aborted = false;
  reason: unknown = undefined;
  #listeners: Array<() => void> | null = null;

  /** Every listener is called at most once (there is one abort): `once` changes nothing. */
  addEventListener(_type: 'abort', listener: () => void, _options?: { once?: boolean }): void {
    if (this.aborted) return;
    if (this.#listeners === null) this.#listeners = [listener];
    else this.#listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const list = this.#listeners;
    if (list === null) return;
    const i = list.indexOf(listener);
    if (i !== -1) list.splice(i, 1);
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const list = this.#listeners;
    this.#listeners = null;
    if (list !== null) for (const listener of list) listener();
  }
}

/** Resolves true after `ms`, or false as soon as `signal` aborts (at once when it already has). */
export function delay(ms: number, signal?: CallerSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

interface Answering {
  readonly writableFinished: boolean;
  on(event: 'close', listener: () => void): unknown;
}

/**
 * A signal aborted (with CLIENT_GONE) when the response to one request closes before it was finished:
 * the caller went away. For both doors that answer HTTP requests (POST request, the listener's
 * absolute-URI requests). It listens on the response, which lives for one request: a listener on the
 * socket would pile up on a keep-alive connection, one per request. on(), not once(): 'close' comes once,
 * and once() wraps every listener in an object of its own.
 */
export function responseGone(res: Answering): CallerGone {
  const gone = new CallerGone();
  res.on('close', () => {
    if (!res.writableFinished) gone.abort(CLIENT_GONE);
  });
  return gone;
}

interface Closing {
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
}

/** A signal that aborts when its socket closes, until released. */
export interface CloseWatch {
  readonly signal: CallerSignal;
  /** The socket's closing no longer concerns the caller: the listener goes, the signal never aborts. */
  release(): void;
}

/**
 * A signal aborted (with CLIENT_GONE) when `emitter` emits 'close', until `release()`. A tunnel's door
 * needs it only until the tunnel is open (splice.ts watches the sockets after that); left in place, it
 * was aborted at the end of every tunnel, an Event made and dispatched to nobody, which showed in a
 * --cpu-prof of the CONNECT path.
 */
export function closeSignal(emitter: Closing): CloseWatch {
  const gone = new CallerGone();
  const onClose = () => gone.abort(CLIENT_GONE);
  emitter.once('close', onClose);
  return { signal: gone, release: () => emitter.off('close', onClose) };
}
