/*
 * Idle tunnels (ROTA_TUNNEL_IDLE_TIMEOUT_S), found by one sweep over every open tunnel instead of a timer
 * per socket.
 *
 *   every `intervalMs`, for each open tunnel:
 *     did either socket read a byte since the last sweep? ──yes──▶ active now
 *        │ no
 *        ▼
 *     silent for idleMs or more? ──yes──▶ onIdle() (splice.ts destroys both sockets)
 *
 * Why: socket.setTimeout() on both sockets is a timer each, and Node refreshes it on every chunk read or
 * written. In a --cpu-prof of new CONNECT tunnels per second the two timers cost ~20 µs of the ~185 µs a
 * tunnel took (the heaviest single part of the tunnel's own code). A sweep reads two byte counters per
 * tunnel per interval; nothing happens per chunk. The price: a tunnel is closed between idleMs and
 * idleMs + intervalMs after its last byte, not at idleMs exactly.
 */
import type { Duplex } from 'node:stream';

interface Counted {
  readonly bytesRead?: number;
}

interface Watched {
  readonly client: Duplex;
  readonly upstream: Duplex;
  readonly onIdle: () => void;
  /** Bytes read by both sockets at the last sweep. */
  seen: number;
  /** When `seen` last changed (monotonic ms). */
  activeAt: number;
}

export interface IdleSweepOptions {
  /** Sweep period; default a quarter of idleMs, between 50 ms and 1 s. */
  readonly intervalMs?: number;
  /** Monotonic ms; tests give their own. */
  readonly now?: () => number;
}

/** Bytes either socket of a tunnel has read, whichever way they went. */
function progress(w: { client: Duplex; upstream: Duplex }): number {
  return ((w.client as Counted).bytesRead ?? 0) + ((w.upstream as Counted).bytesRead ?? 0);
}

export class IdleSweeper {
  readonly idleMs: number;
  readonly #intervalMs: number;
  readonly #now: () => number;
  readonly #watched = new Set<Watched>();
  #timer: NodeJS.Timeout | null = null;

  constructor(idleMs: number, opts: IdleSweepOptions = {}) {
    this.idleMs = idleMs;
    this.#intervalMs = opts.intervalMs ?? Math.min(1_000, Math.max(50, Math.floor(idleMs / 4)));
    this.#now = opts.now ?? (() => performance.now());
  }

  /** Tunnels watched now. */
  get size(): number {
    return this.#watched.size;
  }

  /** Calls `onIdle` once the tunnel has been silent for idleMs; the function returned stops watching. */
  watch(client: Duplex, upstream: Duplex, onIdle: () => void): () => void {
    const w: Watched = { client, upstream, onIdle, seen: 0, activeAt: this.#now() };
    w.seen = progress(w);
    this.#watched.add(w);
    if (this.#timer === null) {
      // Unref'd: open tunnels keep the process alive through their sockets, not through this timer.
      this.#timer = setInterval(() => this.sweep(), this.#intervalMs);
      this.#timer.unref();
    }
    return () => this.#forget(w);
  }

  /** One pass (the timer's; public for tests). */
  sweep(): void {
    const now = this.#now();
    for (const w of this.#watched) {
      const p = progress(w);
      if (p !== w.seen) {
        w.seen = p;
        w.activeAt = now;
      } else if (now - w.activeAt >= this.idleMs) {
        this.#forget(w);
        w.onIdle();
      }
    }
  }

  #forget(w: Watched): void {
    this.#watched.delete(w);
    if (this.#watched.size === 0 && this.#timer !== null) {
      clearInterval(this.#timer);
      this.#timer = null;
    }
  }
}
