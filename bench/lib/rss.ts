import { readFileSync, writeFileSync } from 'node:fs';

/** Resident set size and its high-water mark of a process, from /proc (bytes), or null once it is gone. */
export function readRss(pid: number): { rss: number; hwm: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { rss: kb('VmRSS') * 1024, hwm: kb('VmHWM') * 1024 };
  } catch {
    return null;
  }
}

/** Writing 5 to clear_refs resets VmHWM (Linux >= 4.0), so that the next peak is this workload's alone. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/**
 * Peak RSS of one process over a span of time. The kernel's own high-water mark catches short spikes
 * between samples; where it cannot be reset (not our process), sampling every 100 ms is the fallback.
 */
export class RssWatch {
  private readonly pid: number;
  private readonly hwmReset: boolean;
  private peak = 0;
  private readonly timer: NodeJS.Timeout;
  readonly before: number;

  constructor(pid: number) {
    this.pid = pid;
    this.before = readRss(pid)?.rss ?? 0;
    this.hwmReset = resetPeak(pid);
    this.timer = setInterval(() => this.sample(), 100);
    this.sample();
  }

  private sample(): void {
    const r = readRss(this.pid);
    if (r) this.peak = Math.max(this.peak, r.rss, this.hwmReset ? r.hwm : 0);
  }

  /** Peak RSS in bytes since construction. */
  stop(): number {
    clearInterval(this.timer);
    this.sample();
    return this.peak;
  }
}

export const MB = 1024 * 1024;

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
 * Waits until a process has stopped working (under 5% of a core over half a second), at most `maxMs`:
 * after a warm-up, a gateway may still be serving the requests wrk abandoned, and the measured run
 * must not inherit them.
 */
export async function waitForIdleProcess(pid: number, maxMs: number): Promise<void> {
  const deadline = Date.now() + maxMs;
  const tickMs = 10; // USER_HZ is 100 on Linux
  while (Date.now() < deadline) {
    const a = cpuTicks(pid);
    await new Promise((r) => setTimeout(r, 500));
    const b = cpuTicks(pid);
    if (a === null || b === null || (b - a) * tickMs < 25) return;
  }
}
