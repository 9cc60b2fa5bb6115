import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../../src/runtime/node-flags.ts';
import { canConnect, freePort, freePorts, sleep, startProcess, waitUntil } from './proc.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Limits far above anything a 20 s run can reach: the benchmark measures the gateway, not its 429s. */
const GENEROUS = '1000000/second';

export interface RotaOptions {
  readonly name: string;
  readonly workDir: string;
  /** Added to (and overriding) the production defaults of `benchEnv`. */
  readonly env?: Readonly<Record<string, string>>;
  /** Extra Node flags (--cpu-prof with `--profile`; bench:pair's --a-flags, --b-flags). */
  readonly nodeFlags?: readonly string[];
  /** Another build to start instead of dist/main.js (bench:pair). */
  readonly script?: string;
  /** Raise the open-file limit to this (`ulimit -n` before exec; the pid stays Rota's). */
  readonly nofile?: number;
  /** Spawn node directly, without scripts/with-node.sh, so that the time to ready is Rota's own. */
  readonly direct?: boolean;
}

/** The harness's environment minus any ROTA_*, production mode, loopback, auth off, generous limits. */
function benchEnv(port: number, extra: Readonly<Record<string, string>> = {}) {
  return {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ROTA_'))),
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

/** `cmd args` with the soft open-file limit raised to `n` (or the hard limit): bash execs it, same pid. */
export const withNofile = (n: number, cmd: string, args: readonly string[]): [string, string[]] => [
  'bash',
  ['-c', `ulimit -n ${n} 2>/dev/null || ulimit -n hard; exec "$0" "$@"`, cmd, ...args],
];

/**
 * Starts Rota the way `npm start` does: `bash scripts/with-node.sh node <its flags> dist/main.js` (the
 * production build, which bench/run.ts makes when stale; with-node execs node, so the pid is Rota's
 * own), memory store unless ROTA_STORAGE_PATH is given; resolves at the first 200 of /api/v1/ready.
 */
export async function startRota(o: RotaOptions) {
  const port = await freePort();
  const t0 = performance.now();
  const node = [...NODE_FLAGS, ...(o.nodeFlags ?? []), o.script ?? 'dist/main.js'];
  const wrapper = ['scripts/with-node.sh', 'node', ...node];
  const [cmd, args] = o.direct
    ? [process.execPath, node]
    : o.nofile === undefined
      ? ['bash', wrapper]
      : withNofile(o.nofile, 'bash', wrapper);
  const logPath = join(o.workDir, 'logs', `rota-${o.name}.log`);
  const proc = startProcess(`rota-${o.name}`, cmd, args, { cwd: ROOT, env: benchEnv(port, o.env), logPath });
  const base = `http://127.0.0.1:${port}`;
  await waitUntil(proc, 'Rota', () => isReady(base), 60_000, 5);
  // readyMs: spawn to the first 200 from /api/v1/ready.
  return { base, proc, readyMs: performance.now() - t0, stop: () => proc.stop() };
}

/** True once `base`/api/v1/ready answers 200 (Rota's and proxywhirl's readiness route). */
export async function isReady(base: string): Promise<boolean> {
  return (await fetch(`${base}/api/v1/ready`).catch(() => null))?.status === 200;
}

/** Free ports for Rota's HTTP and SOCKS5 listeners, as its environment. */
export async function listenerEnv(): Promise<Record<string, string>> {
  const [proxy, socks] = await freePorts(2);
  return { ROTA_PROXY_PORT: String(proxy), ROTA_SOCKS_PORT: String(socks) };
}

/** Rota with `ports` (squid's) as its pool and, given `url`, one call through it that answered 200. */
export async function startRotaWithPool(o: RotaOptions, ports: readonly number[], url?: string) {
  const rota = await startRota(o);
  try {
    await addProxies(rota.base, ports);
    if (url) await probe(rota.base, url);
    return rota;
  } catch (e) {
    await rota.stop();
    throw e;
  }
}

/** Rota with its HTTP and SOCKS5 listeners on free ports and `ports` as its pool; `proxyPort` the HTTP one. */
export async function startRotaForward(o: RotaOptions, ports: readonly number[]) {
  const env = { ...(await listenerEnv()), ...o.env };
  const [proxyPort, rota] = [Number(env.ROTA_PROXY_PORT), await startRotaWithPool({ ...o, env }, ports)];
  for (let i = 0; i < 40 && !(await canConnect(proxyPort)); i++) await sleep(50);
  return { ...rota, proxyPort };
}

/** One API call; the answer's JSON (or the start of its text). */
export async function api(base: string, method: string, path: string, body?: unknown, headers = {}) {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  try {
    return { status: r.status, json: JSON.parse(text) as unknown };
  } catch {
    return { status: r.status, json: text.slice(0, 300) as unknown };
  }
}

/** One proxied call (`POST /api/v1/request`), to prove a gateway works before load; throws with the reason. */
export async function probe(base: string, url: string, headers = {}): Promise<void> {
  const r = await api(base, 'POST', '/api/v1/request', { url, method: 'GET' }, headers);
  const data = (r.json as { data?: { status_code?: number } } | null)?.data;
  if (r.status !== 200 || data?.status_code !== 200)
    throw new Error(`probe request answered ${r.status}: ${JSON.stringify(r.json).slice(0, 300)}`);
}

/** Adds `http://127.0.0.1:<port>` for each port through the public API; any answer but 201 stops the run. */
export async function addProxies(base: string, ports: readonly number[], headers = {}, concurrency = 16) {
  let next = 0;
  const worker = async () => {
    while (next < ports.length) {
      const url = `http://127.0.0.1:${ports[next++]}`;
      const r = await api(base, 'POST', '/api/v1/proxies', { url }, headers);
      if (r.status !== 201)
        throw new Error(`adding proxy ${url} answered ${r.status}: ${JSON.stringify(r.json)}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, ports.length) }, worker));
}

/** Sum of every series of one Prometheus metric family in Rota's /metrics, optionally with one label value. */
export async function metric(base: string, name: string, label?: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m?.[1] === name && (!label || (m[2] ?? '').includes(label))) sum += Number(m[3]);
  }
  return sum;
}
