import type { Ctx } from './report.ts';
import { cpuSplit, rssWatch, undisturbed, waitForIdleProcess } from './sample.ts';
import { runTunnelLoad, type TunnelJob, type TunnelResult } from './tunnels.ts';
import { type WrkOptions, type WrkResult, wrk } from './wrk.ts';

/**
 * The one way every load is measured: the same unmeasured warm-up for every subject, a wait until the
 * subject's process is idle again, then the measured run with the subject's peak RSS and each process's
 * CPU per call read from /proc (the subject, squid, and the target, which is the harness process); a run
 * disturbed by other programs is measured again (bench/lib/sample.ts).
 */
export interface Cpu {
  readonly perCallUs: Record<string, number | null>;
  readonly idlePct: number;
}

export interface Measured<T> {
  readonly load: T;
  /** Peak RSS of the subject, MB (null for the direct path: squid is not a subject). */
  readonly peakMb: number | null;
  readonly cpu: Cpu;
  /** Share of the machine other programs took during the measured run. */
  readonly foreign: number;
}

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
export function measureWrk(
  ctx: Ctx,
  o: Omit<WrkOptions, 'durationS'>,
  pid: number | null,
): Promise<Measured<WrkResult>> {
  const run = (durationS: number) => wrk({ timeoutS: 30, ...o, durationS });
  return measured(ctx, pid, run, (w) => w.requests);
}

/** A CONNECT load (bench/lib/tunnels.ts) against the process `pid`. */
export function measureTunnels(
  ctx: Ctx,
  job: Omit<TunnelJob, 'durationS'>,
  pid: number | null,
  seconds = ctx.loadS,
): Promise<Measured<TunnelResult>> {
  const run = async (durationS: number) => {
    const r = await runTunnelLoad({ ...job, durationS });
    if (r.done === 0) throw new Error(`no tunnel carried its GET: ${r.firstFailure ?? 'none started'}`);
    return r;
  };
  return measured(ctx, pid, run, (r) => r.done, seconds);
}

/** The JSON body of `POST /api/v1/request` for a GET of `url`, as wrk options for the gateway at `base`. */
export function postOptions(base: string, url: string, headers: Readonly<Record<string, string>> = {}) {
  return {
    url: `${base}/api/v1/request`,
    method: 'POST',
    body: JSON.stringify({ url, method: 'GET' }),
    headers: { 'Content-Type': 'application/json', ...headers },
  };
}

/** wrk options for absolute-URI GETs of `url` through the forward proxy on `port`. */
export function forwardOptions(port: number, url: string) {
  return { url: `http://127.0.0.1:${port}/`, path: url, headers: { Host: new URL(url).host } };
}
