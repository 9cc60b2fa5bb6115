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
type Err = (typeof ERRORS)[number];

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
  readonly errors: Record<Err, number>;
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
  const [p50Ms, p90Ms, p99Ms, maxMs] = ['p50_us', 'p90_us', 'p99_us', 'max_us'].map((k) => f(k) / 1000);
  const times = { p50Ms: p50Ms!, p90Ms: p90Ms!, p99Ms: p99Ms!, maxMs: maxMs! };
  return result(f('requests'), f('duration_us') / 1e6, f('bytes'), times, (e) => f(e));
}

type Times = Pick<WrkResult, 'p50Ms' | 'p90Ms' | 'p99Ms' | 'maxMs'>;

function result(requests: number, durationS: number, bytes: number, t: Times, count: (e: Err) => number) {
  const rates = { rps: requests / durationS, mibps: bytes / durationS / (1024 * 1024) };
  const errors = Object.fromEntries(ERRORS.map((e) => [e, count(e)])) as WrkResult['errors'];
  return { requests, durationS, bytes, ...rates, ...t, errors };
}

/** Successful requests per second (answers below 400). */
export function goodput(w: WrkResult): number {
  return (w.requests - w.errors.status) / w.durationS;
}

/** Two runs of the same subject (the direct path before and after the gateways) as one. */
export function pooled(a: WrkResult, b: WrkResult): WrkResult {
  const [p50Ms, p90Ms, p99Ms] = (['p50Ms', 'p90Ms', 'p99Ms'] as const).map((k) => (a[k] + b[k]) / 2);
  const t = { p50Ms: p50Ms!, p90Ms: p90Ms!, p99Ms: p99Ms!, maxMs: Math.max(a.maxMs, b.maxMs) };
  const sum = (k: 'requests' | 'durationS' | 'bytes') => a[k] + b[k];
  return result(sum('requests'), sum('durationS'), sum('bytes'), t, (e) => a.errors[e] + b.errors[e]);
}

/** Debian's wrk, installed with apt-get when missing and we are root. */
export const ensureWrk = (log: (m: string) => void) => aptInstall('wrk', WRK, log);
