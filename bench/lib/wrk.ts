import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { run } from './proc.ts';

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
  const r = await run(WRK, args, { timeoutMs: (o.durationS + (o.timeoutS ?? 30) + 30) * 1000 });
  const line = r.stdout.split('\n').find((l) => l.startsWith('BENCH_JSON '));
  if (r.code !== 0 || !line) {
    throw new Error(`wrk failed (exit ${r.code}): ${(r.stderr || r.stdout).trim().slice(0, 300)}`);
  }
  const raw = JSON.parse(line.slice('BENCH_JSON '.length)) as Record<string, number>;
  const f = (name: string) => raw[name] ?? Number.NaN;
  const durationS = f('duration_us') / 1e6;
  return {
    requests: f('requests'),
    durationS,
    bytes: f('bytes'),
    rps: f('requests') / durationS,
    mibps: f('bytes') / durationS / (1024 * 1024),
    p50Ms: f('p50_us') / 1000,
    p90Ms: f('p90_us') / 1000,
    p99Ms: f('p99_us') / 1000,
    maxMs: f('max_us') / 1000,
    errors: Object.fromEntries(ERRORS.map((e) => [e, f(e)])) as WrkResult['errors'],
  };
}

/** Successful requests per second (answers below 400). */
export function goodput(w: WrkResult): number {
  return (w.requests - w.errors.status) / w.durationS;
}

/** Two runs of the same subject (the direct path before and after the gateways) as one. */
export function pooled(a: WrkResult, b: WrkResult): WrkResult {
  const requests = a.requests + b.requests;
  const durationS = a.durationS + b.durationS;
  const bytes = a.bytes + b.bytes;
  const mean = (x: number, y: number) => (x + y) / 2;
  return {
    requests,
    durationS,
    bytes,
    rps: requests / durationS,
    mibps: bytes / durationS / (1024 * 1024),
    p50Ms: mean(a.p50Ms, b.p50Ms),
    p90Ms: mean(a.p90Ms, b.p90Ms),
    p99Ms: mean(a.p99Ms, b.p99Ms),
    maxMs: Math.max(a.maxMs, b.maxMs),
    errors: Object.fromEntries(ERRORS.map((k) => [k, a.errors[k] + b.errors[k]])) as WrkResult['errors'],
  };
}

/** Debian's wrk, installed with apt-get when missing and we are root. */
export async function ensureWrk(log: (m: string) => void): Promise<void> {
  if (existsSync(WRK)) return;
  if (process.getuid?.() !== 0) throw new Error(`${WRK} is missing: apt-get install wrk`);
  log('installing wrk with apt-get...');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const args = ['install', '-y', '-qq', '--no-install-recommends', 'wrk'];
  if ((await run('apt-get', args, { env, timeoutMs: 600_000 })).code !== 0) {
    await run('apt-get', ['update', '-qq'], { env, timeoutMs: 300_000 });
    await run('apt-get', args, { env, timeoutMs: 600_000 });
  }
  if (!existsSync(WRK)) throw new Error('apt-get install wrk failed');
}
