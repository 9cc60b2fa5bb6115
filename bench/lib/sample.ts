import { readFileSync, writeFileSync } from 'node:fs';
import { ourPids } from './proc.ts';

/**
 * What the harness reads from /proc while a load runs: a process's CPU ticks and RSS, the machine's busy
 * share, and the CPU other programs (another engineer's test suite) took meanwhile.
 */
export const MB = 1024 * 1024;
/** USER_HZ is 100 on Linux: one clock tick of /proc/<pid>/stat is 10 ms. */
const TICK_US = 10_000;
/** Below this share of the machine's CPU used by others, the machine counts as quiet. */
const QUIET = 0.15;
/** A measured run during which others took this share or more is measured again (at most twice). */
const REDO_ABOVE = 0.1;

/** CPU time (user + system) a process has used so far, in clock ticks, or null once it is gone. */
export function cpuTicks(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
}

/**
 * Peak RSS of one process over a span. Writing 5 to clear_refs resets the kernel's high-water mark
 * (VmHWM), which catches spikes between samples; sampling every 100 ms is the fallback.
 */
export class RssWatch {
  private peak = 0;
  private readonly pid: number;
  private readonly hwm: boolean;
  private readonly timer: NodeJS.Timeout;

  constructor(pid: number) {
    this.pid = pid;
    try {
      writeFileSync(`/proc/${pid}/clear_refs`, '5');
      this.hwm = true;
    } catch {
      this.hwm = false;
    }
    this.timer = setInterval(() => this.sample(), 100);
    this.sample();
  }

  private sample(): void {
    try {
      const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
      const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
      this.peak = Math.max(this.peak, kb('VmRSS') * 1024, this.hwm ? kb('VmHWM') * 1024 : 0);
    } catch {
      // the process is gone: its peak is what was seen
    }
  }

  /** Peak RSS in MB since construction. */
  stop(): number {
    clearInterval(this.timer);
    this.sample();
    return this.peak / MB;
  }
}

function machineTicks(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  return { busy: total - (v[3] ?? 0) - (v[4] ?? 0), total };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (at most `maxWaitS`) until other programs use under 15% of the machine; returns the last share seen. */
export async function waitForQuiet(maxWaitS: number, log: (m: string) => void): Promise<number> {
  const deadline = Date.now() + maxWaitS * 1000;
  const busy = async (ms: number) => {
    const a = machineTicks();
    await sleep(ms);
    const b = machineTicks();
    return b.total > a.total ? (b.busy - a.busy) / (b.total - a.total) : 0;
  };
  let share = await busy(2000);
  if (share > QUIET && maxWaitS > 0) log(`  the machine is busy (${(share * 100).toFixed(0)}%); waiting...`);
  while (share > QUIET && Date.now() < deadline) share = await busy(5000);
  return share;
}

/** Waits until a process has stopped working (under 5% of a core over 0.5 s), at most `maxMs`. */
export async function waitForIdleProcess(pid: number, maxMs = 60_000): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (Date.now() < deadline) {
    const a = cpuTicks(pid);
    await sleep(500);
    const b = cpuTicks(pid);
    if (a === null || b === null || b - a < 3) return;
  }
}

/**
 * CPU used during a measurement by programs outside the benchmark, as a share of the machine. Sampled
 * every 250 ms; an interval in which one of our processes started or ended is left out.
 */
export class ForeignCpuWatch {
  private last = this.snapshot();
  private foreign = 0;
  private total = 0;
  private readonly timer = setInterval(() => this.sample(), 250);

  private snapshot() {
    const ours = new Map<number, number>();
    for (const pid of ourPids()) {
      const t = cpuTicks(pid);
      if (t !== null) ours.set(pid, t);
    }
    return { cpu: machineTicks(), ours };
  }

  private sample(): void {
    const now = this.snapshot();
    const same =
      now.ours.size === this.last.ours.size && [...now.ours.keys()].every((p) => this.last.ours.has(p));
    if (same) {
      let ours = 0;
      for (const [pid, t] of now.ours) ours += t - (this.last.ours.get(pid) ?? t);
      this.foreign += Math.max(0, now.cpu.busy - this.last.cpu.busy - ours);
      this.total += now.cpu.total - this.last.cpu.total;
    }
    this.last = now;
  }

  stop(): number {
    clearInterval(this.timer);
    return this.total > 0 ? this.foreign / this.total : 0;
  }
}

/**
 * Runs `run`; when other programs took 10% of the CPU or more meanwhile, waits for a quiet machine and
 * measures again (at most twice). The least disturbed run counts; `foreign` is its disturbed share.
 */
export async function undisturbed<T>(
  run: () => Promise<T>,
  log: (m: string) => void,
  redo = true,
): Promise<{ value: T; foreign: number }> {
  const runs: Array<{ value: T; foreign: number }> = [];
  for (;;) {
    const watch = new ForeignCpuWatch();
    const value = await run().finally(() => watch.stop());
    runs.push({ value, foreign: watch.stop() });
    if (runs.at(-1)!.foreign < REDO_ABOVE || !redo || runs.length > 2) break;
    log(`  other programs took ${(runs.at(-1)!.foreign * 100).toFixed(0)}% of the CPU: measuring again`);
    await waitForQuiet(120, log);
  }
  return runs.reduce((a, b) => (b.foreign < a.foreign ? b : a));
}

/** CPU per call of named processes over one measured run (µs; null if unreadable), and the machine's idle %. */
export class CpuSplit {
  private readonly pids: Readonly<Record<string, number>>;
  private readonly start: { cpu: ReturnType<typeof machineTicks>; ticks: Map<string, number | null> };

  constructor(pids: Readonly<Record<string, number>>) {
    this.pids = pids;
    this.start = { cpu: machineTicks(), ticks: this.ticks() };
  }

  private ticks(): Map<string, number | null> {
    return new Map(Object.entries(this.pids).map(([name, pid]) => [name, cpuTicks(pid)]));
  }

  stop(calls: number): { perCallUs: Record<string, number | null>; idlePct: number } {
    const cpu = machineTicks();
    const perCallUs: Record<string, number | null> = {};
    for (const [name, t1] of this.ticks()) {
      const t0 = this.start.ticks.get(name);
      perCallUs[name] = t0 == null || t1 == null || calls === 0 ? null : ((t1 - t0) * TICK_US) / calls;
    }
    const total = cpu.total - this.start.cpu.total;
    const idle = total - (cpu.busy - this.start.cpu.busy);
    return { perCallUs, idlePct: total > 0 ? (100 * idle) / total : 0 };
  }
}
