/**
 * The tunnel load generator of benchmark workload 8, run by bench/lib/tunnels.ts in a process of its own:
 *
 *   node bench/lib/tunnel-load.ts '<job as JSON>'    (prints one line: TUNNEL_JSON {...})
 *
 * rate: `loops` concurrent loops of connect, CONNECT, one GET, close, for `durationS` (at most `maxTunnels`);
 * bulk: one tunnel, the same large GET again and again for `durationS`;
 * idle: `count` tunnels opened and held idle, the proxy's RSS and descriptors read from /proc around them.
 * Every wait is bounded; a stuck tunnel counts as a timeout, never hangs the run.
 */
import type net from 'node:net';
import { readRss } from './rss.ts';
import { countFds, get, openTunnel, type Tunnel, WireError } from './tunnel-wire.ts';
import type {
  BulkJob,
  BulkResult,
  Failures,
  IdleJob,
  IdleResult,
  Job,
  RateJob,
  RateResult,
} from './tunnels.ts';
import { RESULT_PREFIX } from './tunnels.ts';

const TIMEOUT_MS = 30_000;
const MB = 1024 * 1024;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function countFailure(f: Failures, e: unknown): void {
  const kind = e instanceof WireError ? e.kind : 'error';
  f[kind] = (f[kind] ?? 0) + 1;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** One GET through a fresh socket's tunnel; throws unless the target answered 200. */
async function oneGet(t: Tunnel, job: { authority: string; path: string }): Promise<number> {
  const r = await get(t.socket, t.rest, job.authority, job.path, TIMEOUT_MS);
  if (r.status !== 200) throw new WireError(`target status ${r.status}`, `GET answered ${r.status}`);
  return r.bodyBytes;
}

async function rate(job: RateJob): Promise<RateResult> {
  const latencies: number[] = [];
  const failed: Failures = {};
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const end = start + job.durationS * 1000;
  let started = 0;
  let withProxyId = 0;
  const loop = async () => {
    while (performance.now() < end && started < job.maxTunnels) {
      started++;
      const t0 = performance.now();
      try {
        const t = await openTunnel(job.proxyPort, job.authority, TIMEOUT_MS);
        try {
          await oneGet(t, job);
        } finally {
          t.socket.destroy();
        }
        latencies.push(performance.now() - t0);
        if (t.proxyId) withProxyId++;
      } catch (e) {
        countFailure(failed, e);
        await sleep(5); // a proxy refusing at once must not turn this loop into a busy spin
      }
    }
  };
  await Promise.all(Array.from({ length: job.loops }, loop));
  const durationS = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpu0);
  latencies.sort((a, b) => a - b);
  return {
    tunnels: latencies.length,
    failed,
    durationS,
    perS: latencies.length / durationS,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    loadgenUs: latencies.length > 0 ? (cpu.user + cpu.system) / latencies.length : 0,
    withProxyId,
  };
}

async function bulk(job: BulkJob): Promise<BulkResult> {
  const failed: Failures = {};
  let bytes = 0;
  let downloads = 0;
  let t: Tunnel;
  try {
    t = await openTunnel(job.proxyPort, job.authority, TIMEOUT_MS);
  } catch (e) {
    countFailure(failed, e);
    return { bytes: 0, seconds: 0, mibps: 0, downloads: 0, failed };
  }
  const start = performance.now();
  const end = start + job.durationS * 1000;
  try {
    let rest = t.rest;
    do {
      const r = await get(t.socket, rest, job.authority, job.path, TIMEOUT_MS);
      if (r.status !== 200) throw new WireError(`target status ${r.status}`, `GET answered ${r.status}`);
      rest = r.rest;
      bytes += r.bodyBytes;
      downloads++;
    } while (performance.now() < end);
  } catch (e) {
    countFailure(failed, e);
  } finally {
    t.socket.destroy();
  }
  const seconds = (performance.now() - start) / 1000;
  return { bytes, seconds, mibps: seconds > 0 ? bytes / MB / seconds : 0, downloads, failed };
}

/** Runs `fn` for 0..n-1 with at most `limit` at a time. */
async function bounded(n: number, limit: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, n) }, worker));
}

const rssMb = (pid: number | null) => {
  const r = pid === null ? null : readRss(pid);
  return r === null ? null : r.rss / MB;
};

/** Closes every tunnel, then waits (at most 15 s) until the proxy holds no more descriptors than before. */
async function closeAndWatchFds(
  sockets: readonly net.Socket[],
  pid: number | null,
  fdBefore: number | null,
): Promise<{ fdAfter: number | null; fdReleaseMs: number | null }> {
  for (const s of sockets) s.destroy();
  const closed = performance.now();
  if (pid === null || fdBefore === null) return { fdAfter: null, fdReleaseMs: null };
  let fdAfter = await countFds(pid);
  while (fdAfter !== null && fdAfter > fdBefore && performance.now() - closed < 15_000) {
    await sleep(100);
    fdAfter = await countFds(pid);
  }
  const released = fdAfter !== null && fdAfter <= fdBefore;
  return { fdAfter, fdReleaseMs: released ? performance.now() - closed : null };
}

/** One GET through every tunnel after the hold: how many still carry it. */
async function stillUsable(tunnels: readonly Tunnel[], job: IdleJob, failed: Failures): Promise<number> {
  let usable = 0;
  await bounded(tunnels.length, job.openConcurrency, async (i) => {
    try {
      await oneGet(tunnels[i]!, job);
      usable++;
    } catch (e) {
      countFailure(failed, new WireError(`after the hold: ${e instanceof WireError ? e.kind : 'error'}`, ''));
    }
  });
  return usable;
}

async function idle(job: IdleJob): Promise<IdleResult> {
  const failed: Failures = {};
  const tunnels: Tunnel[] = [];
  const rssBeforeMb = rssMb(job.pid);
  const fdBefore = job.pid === null ? null : await countFds(job.pid);
  let rssPeakMb = rssBeforeMb;
  const watch = setInterval(() => {
    const now = rssMb(job.pid);
    if (now !== null) rssPeakMb = Math.max(rssPeakMb ?? 0, now);
  }, 100);
  const t0 = performance.now();
  await bounded(job.count, job.openConcurrency, async () => {
    try {
      tunnels.push(await openTunnel(job.proxyPort, job.authority, TIMEOUT_MS));
    } catch (e) {
      countFailure(failed, e);
    }
  });
  const openMs = performance.now() - t0;
  await sleep(Math.min(1000, job.holdS * 1000));
  const rssOpenMb = rssMb(job.pid);
  const fdOpen = job.pid === null ? null : await countFds(job.pid);
  await sleep(Math.max(0, job.holdS * 1000 - 1000));
  const usable = await stillUsable(tunnels, job, failed);
  clearInterval(watch);
  const fds = await closeAndWatchFds(
    tunnels.map((t) => t.socket),
    job.pid,
    fdBefore,
  );
  return {
    answered: tunnels.length,
    withProxyId: tunnels.filter((t) => t.proxyId).length,
    failed,
    openMs,
    rssBeforeMb,
    rssOpenMb,
    rssPeakMb,
    fdBefore,
    fdOpen,
    ...fds,
    usable,
  };
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '{}') as Job;
  const hardStop = job.mode === 'idle' ? job.holdS + 200 : job.durationS + 75;
  setTimeout(() => {
    process.stderr.write(`tunnel-load: still running after ${hardStop} s; giving up\n`);
    process.exit(3);
  }, hardStop * 1000).unref();
  const result =
    job.mode === 'rate' ? await rate(job) : job.mode === 'bulk' ? await bulk(job) : await idle(job);
  process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`tunnel-load: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);
