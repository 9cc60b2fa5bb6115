import { readFileSync, writeFileSync } from 'node:fs';
import { ourPids, sleep } from './proc.ts';
import type { Ctx } from './report.ts';
import { runTunnelLoad, type TunnelJob, type TunnelResult } from './tunnels.ts';
import { type WrkOptions, type WrkResult, wrk } from './wrk.ts';

/**
 * The one way every load is measured (BENCHMARKS.md, "Method"): the same unmeasured warm-up for every
 * subject, a wait until the subject's process is idle again, then the measured run with the subject's peak
 * RSS and each process's CPU per call read from /proc; a run disturbed by other programs (another
 * engineer's test suite) is measured again.
 */
const MB = 1024 * 1024;
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
 * Peak RSS of one process from now until the returned function is called, MB. Writing 5 to clear_refs
 * resets the kernel's high-water mark (VmHWM), which catches spikes between samples; sampling every
 * 100 ms is the fallback.
 */
export function rssWatch(pid: number): () => number {
  let [peak, hwm] = [0, true];
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    hwm = false;
  }
  const sample = () => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
      peak = Math.max(peak, kb('VmRSS') * 1024, hwm ? kb('VmHWM') * 1024 : 0);
    } catch {
      // the process is gone: its peak is what was seen
    }
  };
  const timer = setInterval(sample, 100);
  sample();
  return () => {
    clearInterval(timer);
    sample();
    return peak / MB;
  };
}

function machineTicks(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  return { busy: total - (v[3] ?? 0) - (v[4] ?? 0), total };
}

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
async function waitForIdleProcess(pid: number, maxMs = 60_000): Promise<void> {
  for (const deadline = Date.now() + maxMs; Date.now() < deadline; ) {
    const a = cpuTicks(pid);
    await sleep(500);
    const b = cpuTicks(pid);
    if (a === null || b === null || b - a < 3) return;
  }
}

/**
 * CPU used by programs outside the benchmark from now until the returned function is called, as a share
 * of the machine. Sampled every 250 ms; an interval in which one of our processes started or ended is
 * left out.
 */
function foreignCpuWatch(): () => number {
  const snapshot = () => {
    const ours = new Map(ourPids().map((pid) => [pid, cpuTicks(pid)] as const));
    for (const [pid, t] of ours) if (t === null) ours.delete(pid);
    return { cpu: machineTicks(), ours: ours as Map<number, number> };
  };
  let [last, foreign, total] = [snapshot(), 0, 0];
  const timer = setInterval(() => {
    const now = snapshot();
    if (now.ours.size === last.ours.size && [...now.ours.keys()].every((p) => last.ours.has(p))) {
      let ours = 0;
      for (const [pid, t] of now.ours) ours += t - (last.ours.get(pid) ?? t);
      foreign += Math.max(0, now.cpu.busy - last.cpu.busy - ours);
      total += now.cpu.total - last.cpu.total;
    }
    last = now;
  }, 250);
  return () => {
    clearInterval(timer);
    return total > 0 ? foreign / total : 0;
  };
}

/**
 * Runs `run`; when other programs took 10% of the CPU or more meanwhile, waits for a quiet machine and
 * measures again (at most twice). The least disturbed run counts; `foreign` is its disturbed share.
 */
async function undisturbed<T>(run: () => Promise<T>, log: (m: string) => void, redo: boolean) {
  const runs: Array<{ value: T; foreign: number }> = [];
  for (;;) {
    const stop = foreignCpuWatch();
    const value = await run().finally(stop);
    runs.push({ value, foreign: stop() });
    if (runs.at(-1)!.foreign < REDO_ABOVE || !redo || runs.length > 2) break;
    log(`  other programs took ${(runs.at(-1)!.foreign * 100).toFixed(0)}% of the CPU: measuring again`);
    await waitForQuiet(120, log);
  }
  return runs.reduce((a, b) => (b.foreign < a.foreign ? b : a));
}

/**
 * From now until the returned function is called with the calls made: the CPU per call of named
 * processes (µs; null if unreadable) and the machine's idle %.
 */
export function cpuSplit(pids: Readonly<Record<string, number>>) {
  const ticks = () => Object.entries(pids).map(([name, pid]) => [name, cpuTicks(pid)] as const);
  const [m0, t0] = [machineTicks(), new Map(ticks())];
  return (calls: number): { perCallUs: Record<string, number | null>; idlePct: number } => {
    const m1 = machineTicks();
    const perCall = ([name, t1]: readonly [string, number | null]) => {
      const t = t0.get(name);
      return [name, t == null || t1 == null || calls === 0 ? null : ((t1 - t) * TICK_US) / calls];
    };
    const total = m1.total - m0.total;
    const idlePct = total > 0 ? (100 * (total - (m1.busy - m0.busy))) / total : 0;
    return { perCallUs: Object.fromEntries(ticks().map(perCall)), idlePct };
  };
}

export const median = (xs: readonly number[]) =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

export interface Measured<T> {
  readonly load: T;
  /** Peak RSS of the subject, MB (null for the direct path: squid is not a subject). */
  readonly peakMb: number | null;
  readonly cpu: ReturnType<ReturnType<typeof cpuSplit>>;
  /** Share of the machine other programs took during the measured run. */
  readonly foreign: number;
}

/** The CPU per call of the measured process (µs), or null. */
export const subjectCpu = (m: Measured<unknown> | undefined) => m?.cpu.perCallUs.subject ?? null;

async function measured<T>(
  ctx: Ctx,
  pid: number | null,
  run: (seconds: number) => Promise<T>,
  calls: (t: T) => number,
  seconds = ctx.loadS,
): Promise<Measured<T>> {
  await run(ctx.warmS);
  if (pid !== null) await waitForIdleProcess(pid);
  // The subject (none for the direct path), squid, and the target (this process).
  const pids = { squid: ctx.squid.proc.pid, target: process.pid, ...(pid === null ? {} : { subject: pid }) };
  const once = async () => {
    const rss = pid === null ? null : rssWatch(pid);
    const split = cpuSplit(pids);
    const load = await run(seconds).finally(() => rss?.());
    return { load, cpu: split(calls(load)), peakMb: rss?.() ?? null };
  };
  const { value, foreign } = await undisturbed(once, ctx.log, ctx.patient);
  return { ...value, foreign };
}

/** A wrk load (everything but its duration in `o`) against the process `pid`. */
export function measureWrk(ctx: Ctx, o: Omit<WrkOptions, 'durationS'>, pid: number | null) {
  const run = (durationS: number) => wrk({ timeoutS: 30, ...o, durationS });
  return measured<WrkResult>(ctx, pid, run, (w) => w.requests);
}

/** A CONNECT load (bench/lib/tunnels.ts) against the process `pid`. */
export function measureTunnels(ctx: Ctx, job: Omit<TunnelJob, 'durationS'>, pid: number | null, s?: number) {
  const run = async (durationS: number) => {
    const r = await runTunnelLoad({ ...job, durationS });
    if (r.done === 0) throw new Error(`no tunnel carried its GET: ${r.firstFailure ?? 'none started'}`);
    return r;
  };
  return measured<TunnelResult>(ctx, pid, run, (r) => r.done, s);
}

/** The JSON body of `POST /api/v1/request` for a GET of `url`, as wrk options for the gateway at `base`. */
export function postOptions(base: string, url: string, headers: Readonly<Record<string, string>> = {}) {
  const body = JSON.stringify({ url, method: 'GET' });
  const all = { 'Content-Type': 'application/json', ...headers };
  return { url: `${base}/api/v1/request`, method: 'POST', body, headers: all };
}

/** wrk options for absolute-URI GETs of `url` through the forward proxy on `port`. */
export function forwardOptions(port: number, url: string) {
  return { url: `http://127.0.0.1:${port}/`, path: url, headers: { Host: new URL(url).host } };
}
