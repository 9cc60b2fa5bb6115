import { fileURLToPath } from 'node:url';
import { ForeignCpuWatch } from './cpu.ts';
import { ourPids, run } from './proc.ts';

const SCRIPT = fileURLToPath(new URL('../wrk/bench.lua', import.meta.url));
export const WRK = '/usr/bin/wrk';

export interface WrkOptions {
  /** Where wrk connects: the gateway, or the forward proxy itself for the direct path. */
  readonly url: string;
  readonly connections: number;
  readonly durationS: number;
  readonly method?: string;
  /** Request target; an absolute URI when `url` is a forward proxy. Defaults to the path of `url`. */
  readonly path?: string;
  readonly body?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly timeoutS?: number;
}

export interface WrkResult {
  readonly requests: number;
  readonly durationS: number;
  readonly bytes: number;
  readonly rps: number;
  /** Response bytes received per second, in MiB/s. */
  readonly mibps: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Share of the machine's CPU used by programs outside the benchmark during the run (0-1). */
  readonly foreignCpu: number;
  readonly errors: {
    readonly connect: number;
    readonly read: number;
    readonly write: number;
    /** Responses with a status of 400 or more. */
    readonly status: number;
    readonly timeout: number;
  };
}

interface Raw {
  requests: number;
  duration_us: number;
  bytes: number;
  connect: number;
  read: number;
  write: number;
  status: number;
  timeout: number;
  p50_us: number;
  p90_us: number;
  p99_us: number;
  max_us: number;
}

/**
 * One wrk run. A single wrk thread: it drives tens of thousands of requests per second on its own,
 * and the machine has two cores to share between wrk and the servers under test.
 */
export async function wrk(o: WrkOptions): Promise<WrkResult> {
  const u = new URL(o.url);
  const args = [
    '-t1',
    `-c${o.connections}`,
    `-d${Math.max(1, Math.round(o.durationS))}s`,
    `--timeout`,
    `${o.timeoutS ?? 30}s`,
    '-s',
    SCRIPT,
    `${u.protocol}//${u.host}/`,
    '--',
    o.method ?? 'GET',
    o.path ?? `${u.pathname}${u.search}`,
    o.body ?? '',
    ...Object.entries(o.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
  ];
  const watch = new ForeignCpuWatch(ourPids);
  const r = await run(WRK, args, { timeoutMs: (o.durationS + (o.timeoutS ?? 30) + 30) * 1000 });
  const foreignCpu = watch.stop();
  const line = r.stdout.split('\n').find((l) => l.startsWith('BENCH_JSON '));
  if (r.code !== 0 || !line) {
    throw new Error(`wrk failed (exit ${r.code}): ${(r.stderr || r.stdout).trim().slice(0, 300)}`);
  }
  const raw = JSON.parse(line.slice('BENCH_JSON '.length)) as Raw;
  const durationS = raw.duration_us / 1e6;
  return {
    requests: raw.requests,
    durationS,
    bytes: raw.bytes,
    rps: raw.requests / durationS,
    mibps: raw.bytes / durationS / (1024 * 1024),
    p50Ms: raw.p50_us / 1000,
    p90Ms: raw.p90_us / 1000,
    p99Ms: raw.p99_us / 1000,
    maxMs: raw.max_us / 1000,
    foreignCpu,
    errors: {
      connect: raw.connect,
      read: raw.read,
      write: raw.write,
      status: raw.status,
      timeout: raw.timeout,
    },
  };
}

/** Requests that did not end in a 2xx/3xx answer, as wrk counts them. */
export function failures(r: WrkResult): number {
  const e = r.errors;
  return e.status + e.timeout + e.connect + e.read + e.write;
}
