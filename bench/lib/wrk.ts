import { fileURLToPath } from 'node:url';
import { aptInstall, run } from './proc.ts';

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

const ERRORS = ['connect', 'read', 'write', 'status', 'timeout'] as const;

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
  /** Socket errors and timeouts as wrk counts them; `status`: answers of 400 or more. */
  readonly errors: Record<(typeof ERRORS)[number], number>;
}

/**
 * One wrk run. A single wrk thread: it drives tens of thousands of requests per second on its own,
 * and the machine has two cores to share between wrk and the servers under test.
 */
export async function wrk(o: WrkOptions): Promise<WrkResult> {
  const u = new URL(o.url);
  const [timeoutS, durationS] = [o.timeoutS ?? 30, Math.max(1, Math.round(o.durationS))];
  const args = ['-t1', `-c${o.connections}`, `-d${durationS}s`, '--timeout', `${timeoutS}s`, '-s', SCRIPT];
  const request = [o.method ?? 'GET', o.path ?? `${u.pathname}${u.search}`, o.body ?? ''];
  const headers = Object.entries(o.headers ?? {}).map(([k, v]) => `${k}: ${v}`);
  args.push(`${u.protocol}//${u.host}/`, '--', ...request, ...headers);
  const r = await run(WRK, args, { timeoutMs: (o.durationS + timeoutS + 30) * 1000 });
  const line = r.stdout.split('\n').find((l) => l.startsWith('BENCH_JSON '));
  if (r.code !== 0 || !line) {
    throw new Error(`wrk failed (exit ${r.code}): ${(r.stderr || r.stdout).trim().slice(0, 300)}`);
  }
  const raw = JSON.parse(line.slice('BENCH_JSON '.length)) as Record<string, number>;
  const f = (name: string) => raw[name] ?? Number.NaN;
  const ms = ['p50_us', 'p90_us', 'p99_us', 'max_us'].map((k) => f(k) / 1000);
  return result(f('requests'), f('duration_us') / 1e6, f('bytes'), ms, (e) => f(e));
}

function result(
  requests: number,
  durationS: number,
  bytes: number,
  [p50Ms = 0, p90Ms = 0, p99Ms = 0, maxMs = 0]: number[],
  errorCount: (e: (typeof ERRORS)[number]) => number,
): WrkResult {
  const rates = { rps: requests / durationS, mibps: bytes / durationS / (1024 * 1024) };
  const errors = Object.fromEntries(ERRORS.map((e) => [e, errorCount(e)])) as WrkResult['errors'];
  return { requests, durationS, bytes, ...rates, p50Ms, p90Ms, p99Ms, maxMs, errors };
}

/** Successful requests per second (answers below 400). */
export function goodput(w: WrkResult): number {
  return (w.requests - w.errors.status) / w.durationS;
}

/** Two runs of the same subject (the direct path before and after the gateways) as one. */
export function pooled(a: WrkResult, b: WrkResult): WrkResult {
  const ms = [
    (a.p50Ms + b.p50Ms) / 2,
    (a.p90Ms + b.p90Ms) / 2,
    (a.p99Ms + b.p99Ms) / 2,
    Math.max(a.maxMs, b.maxMs),
  ];
  return result(
    a.requests + b.requests,
    a.durationS + b.durationS,
    a.bytes + b.bytes,
    ms,
    (e) => a.errors[e] + b.errors[e],
  );
}

/** Debian's wrk, installed with apt-get when missing and we are root. */
export const ensureWrk = (log: (m: string) => void) => aptInstall('wrk', WRK, log);
