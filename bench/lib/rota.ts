import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../../src/lib/node-flags.ts';
import { freePort, type Proc, sleep, startProcess } from './proc.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Limits far above anything a 20 s run can reach: the benchmark measures the gateway, not its 429s. */
export const GENEROUS = '1000000/second';

export interface Rota {
  readonly base: string;
  readonly proc: Proc;
  /** Spawn to the first 200 from /api/v1/ready, ms. */
  readonly readyMs: number;
  stop(): Promise<void>;
}

export interface RotaOptions {
  readonly name: string;
  readonly workDir: string;
  /** Added to (and overriding) the production defaults below. */
  readonly env?: Readonly<Record<string, string>>;
  readonly readyTimeoutMs?: number;
  /** Extra Node flags, e.g. --cpu-prof when profiling a workload by hand. */
  readonly nodeFlags?: readonly string[];
  /** Another build to start instead of dist/main.js (an A/B against an earlier build by hand). */
  readonly script?: string;
  /** Raise the open-file limit to this (`ulimit -n` before exec; the pid stays Rota's). */
  readonly nofile?: number;
}

/** Rota's old-generation growth cap (src/lib/node-flags.ts; workload 11 has the trade-off). */
export const GROWTH_FLAG = '--heap-growing-percent=50';
/** The Node flags Rota gives itself (src/lib/node-flags.ts re-executes the process with them). */
export const START_FLAGS: readonly string[] = NODE_FLAGS;

/**
 * The environment every workload starts Rota with: the harness's own minus any ROTA_*, production mode,
 * loopback, auth off, loopback targets allowed, every rate limit generous; `extra` last.
 */
export function benchEnv(port: number, extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      (kv): kv is [string, string] => !kv[0].startsWith('ROTA_') && kv[1] !== undefined,
    ),
  );
  return {
    ...inherited,
    NODE_ENV: 'production',
    ROTA_HOST: '127.0.0.1',
    ROTA_PORT: String(port),
    ROTA_REQUIRE_AUTH: 'false',
    ROTA_SSRF_ALLOW: '127.0.0.0/8',
    ROTA_RATE_LIMIT: GENEROUS,
    ROTA_RATE_LIMIT_REQUEST: GENEROUS,
    ROTA_RATE_LIMIT_ADD_PROXY: GENEROUS,
    ROTA_RATE_LIMIT_HEALTH_CHECK: GENEROUS,
    ...extra,
  };
}

/**
 * Starts Rota the way `npm start` does (`bash scripts/with-node.sh node <its flags> dist/main.js`, the
 * production build, which bench/run.ts makes once before the workloads; with-node execs node, so the
 * pid is Rota's own) in production mode: memory store unless ROTA_STORAGE_PATH is given,
 * auth off, loopback targets allowed (ROTA_SSRF_ALLOW), every rate limit generous.
 */
export async function startRota(o: RotaOptions): Promise<Rota> {
  const port = await freePort();
  const env = benchEnv(port, o.env);
  const t0 = performance.now();
  const args = [
    'scripts/with-node.sh',
    'node',
    ...START_FLAGS,
    ...(o.nodeFlags ?? []),
    o.script ?? 'dist/main.js',
  ];
  const proc = startProcess(
    `rota-${o.name}`,
    'bash',
    o.nofile === undefined ? args : ['-c', `${raiseNofile(o.nofile)}; exec bash "$@"`, 'bash', ...args],
    { cwd: ROOT, env, logPath: join(o.workDir, 'logs', `rota-${o.name}.log`) },
  );
  const base = `http://127.0.0.1:${port}`;
  const deadline = t0 + (o.readyTimeoutMs ?? 60_000);
  for (;;) {
    if (proc.hasExited())
      throw new Error(`Rota exited during start-up (${await proc.exited}): see ${proc.logPath}`);
    if (performance.now() > deadline) {
      await proc.stop();
      throw new Error(`Rota was not ready within ${o.readyTimeoutMs ?? 60_000} ms: see ${proc.logPath}`);
    }
    const status = await fetch(`${base}/api/v1/ready`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    await sleep(5);
  }
  const readyMs = performance.now() - t0;
  return { base, proc, readyMs, stop: () => proc.stop() };
}

/** Shell: raise the soft open-file limit to `n`, or to the hard limit when `n` is above it. */
export function raiseNofile(n: number): string {
  return `ulimit -n ${n} 2>/dev/null || ulimit -n hard`;
}

export interface ApiAnswer {
  readonly status: number;
  readonly json: unknown;
}

export async function api(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Readonly<Record<string, string>> = {},
): Promise<ApiAnswer> {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = text.slice(0, 300);
  }
  return { status: r.status, json };
}

export interface ProxyToAdd {
  readonly url: string;
  readonly username?: string;
  readonly password?: string;
}

/** Adds proxies through the public API, a few at a time; any answer but 201 stops the run. */
export async function addProxies(
  base: string,
  proxies: readonly ProxyToAdd[],
  headers: Readonly<Record<string, string>> = {},
  concurrency = 16,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < proxies.length) {
      const p = proxies[next++]!;
      const r = await api(base, 'POST', '/api/v1/proxies', p, headers);
      if (r.status !== 201) {
        throw new Error(
          `adding proxy ${p.url} answered ${r.status}: ${JSON.stringify(r.json).slice(0, 300)}`,
        );
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, proxies.length) }, worker));
}

/** Sum of every series of one Prometheus metric family, optionally only where a label has a value. */
export function sumMetric(text: string, name: string, label?: { name: string; value: string }): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    if (label && !(m[2] ?? '').includes(`${label.name}="${label.value}"`)) continue;
    sum += Number(m[3]);
  }
  return sum;
}

export async function scrape(base: string): Promise<string> {
  const r = await fetch(`${base}/metrics`);
  return r.text();
}

/** The JSON body of a proxied call through a gateway, for the target `url`. */
export function requestBody(url: string): string {
  return JSON.stringify({ url, method: 'GET' });
}
