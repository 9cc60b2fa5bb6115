import { readFileSync } from 'node:fs';
import { cpuTicks } from './rss.ts';

/** Below this share of the machine's CPU used by others, the machine counts as quiet. */
const QUIET = 0.15;

function cpuTimes(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  return { busy: total - idle, total };
}

/** Share of the machine's CPU in use over `ms` (by anything: nothing of ours runs while this is called). */
export async function cpuBusy(ms: number): Promise<number> {
  const a = cpuTimes();
  await new Promise((r) => setTimeout(r, ms));
  const b = cpuTimes();
  return b.total > a.total ? (b.busy - a.busy) / (b.total - a.total) : 0;
}

/**
 * Other programs on the machine (a test suite, a compiler) take CPU from whatever is measured. Before
 * each workload, wait up to `maxWaitS` for the machine to be quiet; return what was seen, for the notes.
 */
export async function waitForQuiet(maxWaitS: number, log: (m: string) => void): Promise<number> {
  const deadline = Date.now() + maxWaitS * 1000;
  let busy = await cpuBusy(2000);
  let told = false;
  while (busy > QUIET && Date.now() < deadline) {
    if (!told)
      log(`  the machine is busy (${(busy * 100).toFixed(0)}% CPU used by other programs); waiting...`);
    told = true;
    busy = await cpuBusy(5000);
  }
  return busy;
}

/**
 * CPU used during a measurement by programs that are not part of it (another test suite, a compiler),
 * as a share of the whole machine. Sampled every 250 ms; an interval in which one of our processes
 * started or ended is left out, since its ticks cannot be told apart.
 */
export class ForeignCpuWatch {
  private readonly pids: () => number[];
  private last: { cpu: ReturnType<typeof cpuTimes>; ours: Map<number, number> };
  private foreign = 0;
  private total = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(pids: () => number[]) {
    this.pids = pids;
    this.last = this.snapshot();
    this.timer = setInterval(() => this.sample(), 250);
  }

  private snapshot() {
    const ours = new Map<number, number>();
    for (const pid of this.pids()) {
      const t = cpuTicks(pid);
      if (t !== null) ours.set(pid, t);
    }
    return { cpu: cpuTimes(), ours };
  }

  private sample(): void {
    const now = this.snapshot();
    const same =
      now.ours.size === this.last.ours.size && [...now.ours.keys()].every((pid) => this.last.ours.has(pid));
    if (same) {
      let ours = 0;
      for (const [pid, t] of now.ours) ours += t - (this.last.ours.get(pid) ?? t);
      this.foreign += Math.max(0, now.cpu.busy - this.last.cpu.busy - ours);
      this.total += now.cpu.total - this.last.cpu.total;
    }
    this.last = now;
  }

  /** Share of the machine's CPU (0-1) that others used while the watch ran. */
  stop(): number {
    clearInterval(this.timer);
    return this.total > 0 ? this.foreign / this.total : 0;
  }
}

/** A note when others took a noticeable share of the CPU during a measured run, else nothing. */
export function foreignNote(label: string, foreignCpu: number): string[] {
  if (foreignCpu < 0.05) return [];
  return [
    `${label}: other programs used ${(foreignCpu * 100).toFixed(0)}% of the machine's CPU during the run.`,
  ];
}

/**
 * Where the machine's CPU went during one measured run, per call: each named process's own time and
 * the share of the machine left idle. It shows which process sets the pace, and whether the cores were
 * full at all (on this VM every hop costs wake-ups; the load generator is the rest).
 */
export class CpuSplit {
  private readonly pids: Readonly<Record<string, number>>;
  private readonly start: { cpu: ReturnType<typeof cpuTimes>; ticks: Map<string, number | null> };

  constructor(pids: Readonly<Record<string, number>>) {
    this.pids = pids;
    this.start = { cpu: cpuTimes(), ticks: this.ticks() };
  }

  private ticks(): Map<string, number | null> {
    return new Map(Object.entries(this.pids).map(([name, pid]) => [name, cpuTicks(pid)]));
  }

  /** µs of CPU per call for each process (null if it could not be read), and the machine's idle %. */
  stop(calls: number): { perCallUs: Record<string, number | null>; idlePct: number } {
    const cpu = cpuTimes();
    const now = this.ticks();
    const perCallUs: Record<string, number | null> = {};
    for (const [name, t1] of now) {
      const t0 = this.start.ticks.get(name);
      // USER_HZ is 100: a tick is 10 ms.
      perCallUs[name] = t0 == null || t1 == null || calls === 0 ? null : ((t1 - t0) * 10_000) / calls;
    }
    const total = cpu.total - this.start.cpu.total;
    const idle = total - (cpu.busy - this.start.cpu.busy);
    return { perCallUs, idlePct: total > 0 ? (100 * idle) / total : 0 };
  }
}
