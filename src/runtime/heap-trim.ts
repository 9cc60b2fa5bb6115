import v8 from 'node:v8';

/**
 * Gives the memory of a burst (start-up, a load) back to the system once the process is quiet.
 *
 *   every second: CPU of the last second ── busy? ──▶ re-arm, nothing else
 *                                       └─ quiet long enough, armed, ≥ 8 MB of heap slack ──▶ one
 *                                          memory-reducing GC (V8's "last resort": young generation
 *                                          shrunk, pooled pages decommitted) ──▶ disarmed until the
 *                                          next busy second
 *   "long enough": 1 s after start-up (in the first minute, before any traffic), else 30 s
 *   (laterQuietIntervals); 60 s for a big heap
 *
 * Why: V8's own memory reducer never fires under Node 24. It waits for a low allocation rate in the
 * young generation, the old generation and the embedder (cppgc) heap, and Node's embedder heap reports
 * an allocation speed of 0, which V8 reads as a mutator utilization of 0, i.e. "high allocation", for
 * ever (seen with --trace-memory-reducer --trace-mutator-utilization). So a process that grew its young
 * generation to the cap during start-up keeps 32 MB committed while idle. Measured on an idle Rota
 * (empty pool): RSS 144 MB without a trim, 108 MB after one.
 *
 * The GC blocks the event loop, so it runs only in a quiet second, once per quiet spell, and its pause
 * is bounded: it grows with the heap (about 1.6 ms per MB of live heap measured here), so a heap over
 * 128 MB used is trimmed only after a minute of quiet. It needs `--expose-gc` (set by `npm start` and
 * the container); without it the trimmer does nothing.
 */
export interface HeapTrimDeps {
  /** A memory-reducing full GC, or undefined when the runtime does not expose one. */
  readonly gc: (() => void) | undefined;
  /** CPU time used by the process so far, µs. */
  readonly cpuUs: () => number;
  readonly heap: () => { readonly committed: number; readonly used: number };
  /** Calls proxied so far (every door); without it, only CPU tells traffic from start-up. */
  readonly served?: () => number;
}

export interface HeapTrimOptions {
  readonly everyMs?: number;
  /** CPU below this share of one core over an interval makes it quiet. */
  readonly quietShare?: number;
  /** Slack (committed minus used) worth a GC. */
  readonly minSlackBytes?: number;
  /** Above this heap used, wait for a long quiet spell (the pause grows with the heap). */
  readonly bigHeapBytes?: number;
  readonly bigHeapQuietIntervals?: number;
  /**
   * Quiet intervals before any trim but the first. A memory-reducing GC flushes compiled code (bytecode
   * and baseline code of every function not running): the next load then pays compilation again,
   * measured at ~35% more CPU per call for ~10 s of small-JSON load after a trim. So a pause between
   * bursts of traffic is not trimmed; a gateway left idle for this long is.
   */
  readonly laterQuietIntervals?: number;
  /** How long start-up lasts, in intervals: a first trim after it waits like a later one. */
  readonly startupIntervals?: number;
  /**
   * Calls after which the process counts as having served traffic even if it was never quiet before
   * them (load from its first second): its hot code is compiled, so its first trim waits like a later
   * one. A few API calls (a readiness probe, adding proxies) stay under it and leave start-up's quick
   * trim in place.
   */
  readonly hotCalls?: number;
}

const MB = 1024 * 1024;

export class HeapTrimmer {
  readonly #deps: HeapTrimDeps;
  readonly #o: Required<HeapTrimOptions>;
  #lastCpu = 0;
  #armed = true;
  #quietIntervals = 0;
  /** Intervals since the trimmer started. */
  #ticks = 0;
  #timer: NodeJS.Timeout | null = null;
  /** A quiet interval has been seen: start-up's own work is over. */
  #startedUp = false;
  /** A busy interval came after start-up: the process has served traffic, its hot code is compiled. */
  #served = false;
  trims = 0;

  constructor(deps: HeapTrimDeps, o: HeapTrimOptions = {}) {
    this.#deps = deps;
    this.#o = {
      everyMs: o.everyMs ?? 1000,
      quietShare: o.quietShare ?? 0.05,
      minSlackBytes: o.minSlackBytes ?? 8 * MB,
      bigHeapBytes: o.bigHeapBytes ?? 128 * MB,
      bigHeapQuietIntervals: o.bigHeapQuietIntervals ?? 60,
      laterQuietIntervals: o.laterQuietIntervals ?? 30,
      startupIntervals: o.startupIntervals ?? 60,
      hotCalls: o.hotCalls ?? 1000,
    };
    this.#lastCpu = deps.cpuUs();
  }

  get enabled(): boolean {
    return this.#deps.gc !== undefined;
  }

  start(): void {
    if (!this.enabled || this.#timer) return;
    this.#timer = setInterval(() => this.tick(), this.#o.everyMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** One interval's decision; true when it trimmed. Public for the tests. */
  tick(): boolean {
    this.#ticks++;
    const cpu = this.#deps.cpuUs();
    const used = cpu - this.#lastCpu;
    this.#lastCpu = cpu;
    if (used > this.#o.everyMs * 1000 * this.#o.quietShare) {
      this.#armed = true;
      this.#quietIntervals = 0;
      if (this.#startedUp) this.#served = true;
      return false;
    }
    this.#startedUp = true;
    this.#quietIntervals++;
    if (!this.#armed || !this.#deps.gc) return false;
    const h = this.#deps.heap();
    if (h.committed - h.used < this.#o.minSlackBytes) return false;
    // The first trim (start-up's garbage; nothing hot is compiled yet) comes in the first quiet interval;
    // later ones only after a long lull, see laterQuietIntervals. So does a first trim once traffic has
    // come: a load in the first minute, then a pause of a second, was trimmed at once and the next load
    // paid for compiling its code again (the benchmark's warm-up and measured run did exactly that).
    // Load from the first second never saw start-up end while busy: the calls it served tell it apart.
    if ((this.#deps.served?.() ?? 0) >= this.#o.hotCalls) this.#served = true;
    const startUpTrim = this.trims === 0 && !this.#served && this.#ticks <= this.#o.startupIntervals;
    let need = startUpTrim ? 1 : this.#o.laterQuietIntervals;
    if (h.used > this.#o.bigHeapBytes) need = Math.max(need, this.#o.bigHeapQuietIntervals);
    if (this.#quietIntervals < need) return false;
    this.#deps.gc();
    this.#armed = false;
    this.trims++;
    // The GC's own CPU must not read as traffic in the next interval.
    this.#lastCpu = this.#deps.cpuUs();
    return true;
  }
}

type ExposedGc = (o: { type: 'major'; flavor: 'last-resort' }) => void;

/** The trimmer on the real process: `gc` from --expose-gc, process.cpuUsage, v8's heap statistics. */
export function processHeapTrimmer(served?: () => number, o?: HeapTrimOptions): HeapTrimmer {
  const exposed = (globalThis as { gc?: ExposedGc }).gc;
  return new HeapTrimmer(
    {
      gc: exposed ? () => exposed({ type: 'major', flavor: 'last-resort' }) : undefined,
      cpuUs: () => {
        const u = process.cpuUsage();
        return u.user + u.system;
      },
      heap: () => {
        const s = v8.getHeapStatistics();
        return { committed: s.total_heap_size, used: s.used_heap_size };
      },
      ...(served ? { served } : {}),
    },
    o,
  );
}
