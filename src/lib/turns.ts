/**
 * Long work split into slices, with the event loop's turn between them: what a bulk import does so that
 * proxied calls are not held up behind it (a client polling /api/v1/ready during a 100,000-line import
 * into SQLite waited up to 2 s in one piece before, at most the COMMIT's ~0.3 s after).
 *
 *   bulk write ──slice──▶ turn ──slice──▶ turn ──…──▶ done ──▶ the operations that waited run
 *                           ▲ other work of the process runs here; the store's own operations wait in whenIdle()
 */

/** Resolves in the check phase of the next turn of the event loop (after pending I/O callbacks). */
export function nextTurn(): Promise<void> {
  return new Promise<void>((r) => setImmediate(r));
}

/**
 * One bulk write at a time, and a way for a store's other operations to wait until none is running: on
 * a single SQLite connection they would otherwise run inside its open transaction; in the memory store
 * they could slip between its check and its insert.
 */
export class BulkGate {
  #running: Promise<void> | null = null;

  /**
   * Runs the synchronous `op` once no bulk write is running. The check and `op` follow each other with
   * nothing awaited in between: a helper that only waited (`await gate.idle(); op()`) would leave its own
   * return as one more hop, in which a bulk write can begin.
   */
  async whenIdle<T>(op: () => T): Promise<T> {
    while (this.#running !== null) await this.#running;
    return op();
  }

  /** Runs `write` once every earlier bulk write has ended (claimed with nothing awaited after the check). */
  async run<T>(write: () => Promise<T>): Promise<T> {
    while (this.#running !== null) await this.#running;
    let end = () => {};
    this.#running = new Promise<void>((r) => {
      end = r;
    });
    try {
      return await write();
    } finally {
      this.#running = null;
      end();
    }
  }
}
