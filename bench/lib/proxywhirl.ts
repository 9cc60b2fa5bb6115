import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, type Proc, run, sleep, startProcess } from './proc.ts';
import { addProxies, api, type ProxyToAdd, ROOT } from './rota.ts';

export const PROXYWHIRL_VERSION = '0.3.3';
const VENV = join(ROOT, 'bench', '.venv');
const PYTHON = join(VENV, 'bin', 'python');
const LAUNCHER = join(ROOT, 'bench', 'proxywhirl_launcher.py');

async function installedVersion(): Promise<string | null> {
  if (!existsSync(PYTHON)) return null;
  const r = await run(PYTHON, ['-c', "import importlib.metadata as m; print(m.version('proxywhirl'))"]);
  return r.code === 0 ? r.stdout.trim() : null;
}

/**
 * proxywhirl from PyPI into bench/.venv (git-ignored). Its API server needs nothing beyond the base
 * package: fastapi and uvicorn[standard] are hard dependencies of 0.3.3; uvicorn is named anyway.
 */
export async function ensureProxywhirl(log: (m: string) => void): Promise<string> {
  if ((await installedVersion()) === PROXYWHIRL_VERSION) return PROXYWHIRL_VERSION;
  log(`installing proxywhirl ${PROXYWHIRL_VERSION} into bench/.venv (pip)...`);
  if (!existsSync(PYTHON)) {
    const v = await run('python3', ['-m', 'venv', VENV], { timeoutMs: 120_000 });
    if (v.code !== 0) throw new Error(`python3 -m venv failed: ${v.stderr.trim().slice(-300)}`);
  }
  const pip = await run(
    join(VENV, 'bin', 'pip'),
    ['install', '-q', '--disable-pip-version-check', `proxywhirl==${PROXYWHIRL_VERSION}`, 'uvicorn'],
    { timeoutMs: 900_000 },
  );
  const got = await installedVersion();
  if (got !== PROXYWHIRL_VERSION) {
    throw new Error(`pip install proxywhirl==${PROXYWHIRL_VERSION} failed: ${pip.stderr.trim().slice(-300)}`);
  }
  return got;
}

export interface Proxywhirl {
  readonly base: string;
  readonly proc: Proc;
  /** The X-API-Key header every call needs (auth is on). */
  readonly headers: Readonly<Record<string, string>>;
  stop(): Promise<void>;
}

/** proxywhirl's API under uvicorn on loopback, through bench/proxywhirl_launcher.py, with `proxies` added. */
export async function startProxywhirl(workDir: string, proxies: readonly ProxyToAdd[]): Promise<Proxywhirl> {
  const port = await freePort();
  const key = randomBytes(24).toString('hex');
  const dataDir = join(workDir, 'proxywhirl');
  mkdirSync(dataDir, { recursive: true });
  const env = {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PROXYWHIRL_'))),
    PROXYWHIRL_REQUIRE_AUTH: 'true',
    PROXYWHIRL_API_KEY: key,
    PROXYWHIRL_RATE_LIMIT: '1000000/second',
    HOME: dataDir,
    XDG_DATA_HOME: dataDir,
    XDG_CACHE_HOME: dataDir,
  };
  const proc = startProcess('proxywhirl', PYTHON, [LAUNCHER, String(port)], {
    cwd: dataDir,
    env,
    logPath: join(workDir, 'logs', 'proxywhirl.log'),
  });
  const base = `http://127.0.0.1:${port}`;
  const headers = { 'X-API-Key': key };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.hasExited()) throw new Error(`proxywhirl exited during start-up: see ${proc.logPath}`);
    if (Date.now() > deadline) {
      await proc.stop();
      throw new Error(`proxywhirl was not ready within 60 s: see ${proc.logPath}`);
    }
    const status = await fetch(`${base}/api/v1/ready`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    await sleep(100);
  }
  try {
    await addProxies(base, proxies, headers, 1);
  } catch (e) {
    await proc.stop();
    throw e;
  }
  return { base, proc, headers, stop: () => proc.stop() };
}

/** One proxied call, to prove the set-up works before load is put on it; throws with the reason. */
export async function probe(
  base: string,
  targetUrl: string,
  headers: Readonly<Record<string, string>> = {},
): Promise<void> {
  const r = await api(base, 'POST', '/api/v1/request', { url: targetUrl, method: 'GET' }, headers);
  const data = (r.json as { data?: { status_code?: number } } | null)?.data;
  if (r.status !== 200 || data?.status_code !== 200) {
    throw new Error(`probe request answered ${r.status}: ${JSON.stringify(r.json).slice(0, 300)}`);
  }
}
