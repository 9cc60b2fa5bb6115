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

interface Closing {
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
}

/** A signal that aborts when its socket closes, until released. */
export interface CloseWatch {
  readonly signal: AbortSignal;
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
  const ac = new AbortController();
  const onClose = () => ac.abort(CLIENT_GONE);
  emitter.once('close', onClose);
  return { signal: ac.signal, release: () => emitter.off('close', onClose) };
}
