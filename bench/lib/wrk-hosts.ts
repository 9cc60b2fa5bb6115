import { fileURLToPath } from 'node:url';
import { ForeignCpuWatch } from './cpu.ts';
import { run } from './proc.ts';
import { ourTree } from './tree.ts';
import { WRK } from './wrk.ts';

const SCRIPT = fileURLToPath(new URL('../wrk/hosts.lua', import.meta.url));

/** One wrk thread's counts, read from Rota's answers. */
export interface ThreadCounts {
  readonly calls: number;
  /** HTTP 200 from Rota and status_code 200 from the target. */
  readonly ok: number;
  readonly attempts: number;
  /** Answers of Rota that were not HTTP 200. */
  readonly not200: number;
  /** The same, for answers received once the window had started. */
  readonly lateCalls: number;
  readonly lateOk: number;
  readonly lateAttempts: number;
}

export interface HostsResult {
  readonly durationS: number;
  /** Calls that got no answer at all (wrk's timeouts and socket errors), over every thread. */
  readonly noAnswer: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly threads: readonly ThreadCounts[];
  readonly foreignCpu: number;
}

interface Raw {
  duration_us: number;
  connect: number;
  read: number;
  write: number;
  status: number;
  timeout: number;
  p50_us: number;
  p99_us: number;
  threads: {
    calls: number;
    ok: number;
    attempts: number;
    not_200: number;
    late_calls: number;
    late_ok: number;
    late_attempts: number;
  }[];
}

/**
 * One wrk run of `POST /api/v1/request` with one thread per body (the connections split evenly), each
 * thread counting the target statuses and attempts in Rota's answers (bench/wrk/hosts.lua).
 */
export async function wrkHosts(o: {
  readonly base: string;
  readonly bodies: readonly string[];
  readonly connections: number;
  readonly durationS: number;
  readonly windowS: number;
}): Promise<HostsResult> {
  const args = [
    `-t${o.bodies.length}`,
    `-c${o.connections}`,
    `-d${Math.max(1, Math.round(o.durationS))}s`,
    '--timeout',
    '30s',
    '-s',
    SCRIPT,
    `${o.base}/`,
    '--',
    'POST',
    '/api/v1/request',
    String(o.windowS),
    ...o.bodies,
    'Content-Type: application/json',
  ];
  const watch = new ForeignCpuWatch(ourTree);
  const r = await run(WRK, args, { timeoutMs: (o.durationS + 60) * 1000 });
  const foreignCpu = watch.stop();
  const line = r.stdout.split('\n').find((l) => l.startsWith('BENCH_JSON '));
  if (r.code !== 0 || !line) {
    throw new Error(`wrk failed (exit ${r.code}): ${(r.stderr || r.stdout).trim().slice(0, 300)}`);
  }
  const raw = JSON.parse(line.slice('BENCH_JSON '.length)) as Raw;
  return {
    durationS: raw.duration_us / 1e6,
    noAnswer: raw.connect + raw.read + raw.write + raw.timeout,
    p50Ms: raw.p50_us / 1000,
    p99Ms: raw.p99_us / 1000,
    threads: raw.threads.map((t) => ({
      calls: t.calls,
      ok: t.ok,
      attempts: t.attempts,
      not200: t.not_200,
      lateCalls: t.late_calls,
      lateOk: t.late_ok,
      lateAttempts: t.late_attempts,
    })),
    foreignCpu,
  };
}
