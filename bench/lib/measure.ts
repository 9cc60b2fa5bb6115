import type { Ctx } from './report.ts';
import { CpuSplit, RssWatch, undisturbed, waitForIdleProcess } from './sample.ts';
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

/** The subject's process (null for the direct path) and the processes whose CPU is split per call. */
function pidsOf(ctx: Ctx, pid: number | null): Record<string, number> {
  const pids: Record<string, number> = { squid: ctx.squid.proc.pid, target: process.pid };
  if (pid !== null) pids.subject = pid;
  return pids;
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
  const { value, foreign } = await undisturbed(
    async () => {
      const rss = pid === null ? null : new RssWatch(pid);
      const split = new CpuSplit(pidsOf(ctx, pid));
      const load = await run(seconds).finally(() => rss?.stop());
      return { load, cpu: split.stop(calls(load)), peakMb: rss?.stop() ?? null };
    },
    ctx.log,
    ctx.patient,
  );
  return { ...value, foreign };
}

/** A wrk load (everything but its duration in `o`) against the process `pid`. */
export function measureWrk(
  ctx: Ctx,
  o: Omit<WrkOptions, 'durationS'>,
  pid: number | null,
): Promise<Measured<WrkResult>> {
  return measured(
    ctx,
    pid,
    (durationS) => wrk({ timeoutS: 30, ...o, durationS }),
    (w) => w.requests,
  );
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
