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

/** A signal aborted (with CLIENT_GONE) when `emitter` emits 'close'. */
export function closeSignal(emitter: { once(event: 'close', listener: () => void): unknown }): AbortSignal {
  const ac = new AbortController();
  emitter.once('close', () => ac.abort(CLIENT_GONE));
  return ac.signal;
}
