import type { ProxyEntry } from '../pool/pool.ts';

/** One attempt of a call, running. `done` never rejects: an attempt's failure is a result too. */
export interface Run<T> {
  readonly entry: ProxyEntry;
  /** 1-based attempt number within the call. */
  readonly n: number;
  /** Monotonic ms. */
  readonly startedAt: number;
  readonly done: Promise<T>;
  /** Monotonic ms after which the call may ask another proxy too; null: never for this attempt. */
  hedgeAt: number | null;
  /** True once its hedge time has passed without an answer. */
  stalled: boolean;
  /** Cancels it (an 'aborted' attempt: no blame); null when it cannot be on its own (the common case). */
  readonly cancel: (() => void) | null;
  /** Stops the caller's going away from cancelling it (it outlives the call); null with `cancel`. */
  readonly detach: (() => void) | null;
}

export type InFlightEvent<T> = { type: 'done'; run: Run<T>; value: T } | { type: 'hedge' };

/**
 * The attempts of one call that are still running. Usually one at a time; more only when an attempt
 * through an unproven proxy stalls past its hedge time and the call asks another proxy meanwhile.
 */
export class InFlight<T> {
  // An array, not a Set: it holds one run, rarely two, and a Set's hash table (made per call, rehashed
  // when emptied) was a visible share of a call's allocations in a heap profile of the listeners.
  readonly #runs: Run<T>[] = [];

  get size(): number {
    return this.#runs.length;
  }

  add(run: Run<T>): void {
    this.#runs.push(run);
  }

  #delete(run: Run<T>): void {
    const i = this.#runs.indexOf(run);
    if (i !== -1) this.#runs.splice(i, 1);
  }

  /** Every running attempt has passed its hedge time: the call may start another. */
  allStalled(): boolean {
    for (const r of this.#runs) if (!r.stalled) return false;
    return true;
  }

  /** The next thing to happen: an attempt finished (and is removed), or a hedge time came. */
  next(now: () => number): Promise<InFlightEvent<T>> {
    const only = this.#runs.length === 1 ? this.#runs[0]! : null;
    // The common case, one attempt and no hedge: no race, no timer, no extra promise.
    if (only !== null && only.hedgeAt === null) {
      return only.done.then((value) => {
        this.#delete(only);
        return { type: 'done', run: only, value };
      });
    }
    return this.#raced(now);
  }

  async #raced(now: () => number): Promise<InFlightEvent<T>> {
    for (;;) {
      const ev = await this.#wait(now);
      if (ev === null) continue; // the timer fired before the hedge time: wait on
      if (ev.type === 'done') this.#delete(ev.run);
      return ev;
    }
  }

  /** One wait: a finished attempt, a hedge event, or null when the timer came early. */
  async #wait(now: () => number): Promise<InFlightEvent<T> | null> {
    const runs = [...this.#runs];
    let hedgeAt = Number.POSITIVE_INFINITY;
    for (const r of runs) if (r.hedgeAt !== null && r.hedgeAt < hedgeAt) hedgeAt = r.hedgeAt;
    if (runs.length === 1 && hedgeAt === Number.POSITIVE_INFINITY) {
      const run = runs[0]!;
      return { type: 'done', run, value: await run.done };
    }
    let timer: NodeJS.Timeout | undefined;
    const races: Promise<InFlightEvent<T> | null>[] = runs.map((run) =>
      run.done.then((value) => ({ type: 'done' as const, run, value })),
    );
    if (hedgeAt !== Number.POSITIVE_INFINITY) {
      // Timers run on the event loop's cached clock and can fire a little before `now()` says they should.
      races.push(
        new Promise((resolve) => {
          timer = setTimeout(
            () => resolve(this.#markStalled(now()) ? { type: 'hedge' } : null),
            Math.max(0, hedgeAt - now()),
          );
        }),
      );
    }
    try {
      return await Promise.race(races);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Marks every attempt whose hedge time has come; false when none had. */
  #markStalled(at: number): boolean {
    let any = false;
    for (const r of this.#runs) {
      if (r.hedgeAt !== null && r.hedgeAt <= at) {
        r.hedgeAt = null;
        r.stalled = true;
        any = true;
      }
    }
    return any;
  }

  /**
   * Ends the call's hold on what is still running: attempts that started before `winner` (they were
   * overtaken) are left to finish in the background and returned; every other one is cancelled and
   * awaited (a cancelled attempt settles within microtasks), so that its bookkeeping is
   * done before the call is reported. A cancelled attempt that had an answer all the same hands it to
   * `free` (a streamed body or a tunnel must not be left open).
   */
  async release(winner: Run<T> | null, free: (value: T) => void = () => {}): Promise<Run<T>[]> {
    const runs = this.#runs.splice(0);
    const behind = runs.filter((r) => winner !== null && r.startedAt < winner.startedAt);
    for (const r of behind) r.detach?.();
    const cancelled = runs.filter((r) => !behind.includes(r) && r.cancel !== null);
    for (const r of cancelled) r.cancel?.();
    await Promise.all(cancelled.map((r) => r.done.then(free)));
    // One that cannot be cancelled never runs beside another (executor.ts), so none is missed here.
    return behind;
  }
}
