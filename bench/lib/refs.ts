import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { canConnect, freePort, run, startProcess, waitUntil } from './proc.ts';
import { addProxies, isReady, ROOT, startRotaForward, withNofile } from './rota.ts';
import { get, openTunnel } from './tunnel-wire.ts';

/**
 * The references Rota is measured against, each in a process of its own on loopback:
 * proxywhirl 0.3.3 (PyPI, in bench/.venv) for the REST call; the scripts of bench/reference (the bare
 * relay, the same relay on Fastify, the forward relay, Apify proxy-chain) for the floor and the listener.
 */
export const PROXYWHIRL_VERSION = '0.3.3';
const VENV = join(ROOT, 'bench', '.venv');
const PYTHON = join(VENV, 'bin', 'python');
/** Descriptors for every forward proxy: a tunnel load holds two per tunnel. */
const NOFILE = 65_536;

async function proxywhirlVersion(): Promise<string | null> {
  if (!existsSync(PYTHON)) return null;
  const r = await run(PYTHON, ['-c', "import importlib.metadata as m; print(m.version('proxywhirl'))"]);
  return r.code === 0 ? r.stdout.trim() : null;
}

/** proxywhirl from PyPI into bench/.venv (git-ignored), with uvicorn for its API server. */
export async function ensureProxywhirl(log: (m: string) => void): Promise<void> {
  if ((await proxywhirlVersion()) === PROXYWHIRL_VERSION) return;
  log(`installing proxywhirl ${PROXYWHIRL_VERSION} into bench/.venv (pip)...`);
  if (!existsSync(PYTHON)) {
    const v = await run('python3', ['-m', 'venv', VENV], { timeoutMs: 120_000 });
    if (v.code !== 0) throw new Error(`python3 -m venv failed: ${v.stderr.trim().slice(-300)}`);
  }
  const pkgs = [`proxywhirl==${PROXYWHIRL_VERSION}`, 'uvicorn'];
  const args = ['install', '-q', '--disable-pip-version-check', ...pkgs];
  const pip = await run(join(VENV, 'bin', 'pip'), args, { timeoutMs: 900_000 });
  if ((await proxywhirlVersion()) !== PROXYWHIRL_VERSION)
    throw new Error(`pip install proxywhirl==${PROXYWHIRL_VERSION} failed: ${pip.stderr.trim().slice(-300)}`);
}

/**
 * proxywhirl's API under uvicorn through bench/proxywhirl_launcher.py (which lifts only its loopback
 * checks and its hard-coded 50/minute limit), API key on, `ports` added as its proxies.
 */
export async function startProxywhirl(workDir: string, ports: readonly number[], unavailable: string | null) {
  if (unavailable) throw new Error(unavailable);
  const port = await freePort();
  const key = randomBytes(24).toString('hex');
  const dataDir = join(workDir, 'proxywhirl');
  mkdirSync(dataDir, { recursive: true });
  const inherited = Object.entries(process.env).filter(([k]) => !k.startsWith('PROXYWHIRL_'));
  const env = {
    ...Object.fromEntries(inherited),
    PROXYWHIRL_REQUIRE_AUTH: 'true',
    PROXYWHIRL_API_KEY: key,
    PROXYWHIRL_RATE_LIMIT: '1000000/second',
    HOME: dataDir,
    XDG_DATA_HOME: dataDir,
    XDG_CACHE_HOME: dataDir,
  };
  const launcher = join(ROOT, 'bench', 'proxywhirl_launcher.py');
  const logPath = join(workDir, 'logs', 'proxywhirl.log');
  const proc = startProcess('proxywhirl', PYTHON, [launcher, String(port)], { cwd: dataDir, env, logPath });
  const base = `http://127.0.0.1:${port}`;
  await waitUntil(proc, 'proxywhirl', () => isReady(base), 60_000);
  const headers = { 'X-API-Key': key };
  await addProxies(base, ports, headers, 1).catch(async (e: unknown) => {
    await proc.stop();
    throw e;
  });
  return { base, pid: proc.pid, headers, stop: () => proc.stop() };
}

/** A script of bench/reference (`relay`, `fastify-relay`, `forward-relay`, `proxy-chain`) on a free port. */
export async function startReference(workDir: string, name: string, ports: readonly number[]) {
  const port = await freePort();
  const file = join(ROOT, 'bench', 'reference', `${name}.ts`);
  const [cmd, args] = withNofile(NOFILE, process.execPath, [file, String(port), ports.join(',')]);
  const proc = startProcess(name, cmd, args, { logPath: join(workDir, 'logs', `${name}.log`) });
  await waitUntil(proc, name, () => canConnect(port), 15_000);
  return { base: `http://127.0.0.1:${port}`, port, pid: proc.pid, headers: {}, stop: () => proc.stop() };
}

/** A forward proxy under test: squid itself (direct), Rota's HTTP listener, proxy-chain, the forward relay. */
export interface Forward {
  readonly name: 'direct' | 'rota' | 'proxy-chain' | 'relay';
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

/** One absolute-URI GET and one CONNECT with a GET inside, both answered 200, or it throws. */
async function probeForward(f: Forward, url: string): Promise<void> {
  const authority = new URL(url).host;
  const status = await new Promise<number>((resolve, reject) => {
    const o = { host: '127.0.0.1', port: f.port, path: url, headers: { host: authority }, agent: false };
    const req = http.request({ ...o, timeout: 10_000 });
    req.once('response', (res) => resolve(res.resume().statusCode ?? 0));
    req.once('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.once('error', reject);
    req.end();
  });
  if (status !== 200) throw new Error(`${f.name}: absolute-URI GET answered ${status}`);
  const t = await openTunnel(f.port, authority, 10_000);
  const r = await get(t.socket, t.rest, authority, '/json', 10_000).finally(() => t.socket.destroy());
  if (r.status !== 200) throw new Error(`${f.name}: GET inside a CONNECT tunnel answered ${r.status}`);
}

/** The four forward proxies, each probed; squid (direct) is shared and not stopped with the others. */
export async function startForwards(
  workDir: string,
  squid: { ports: readonly number[]; pid: number },
  url: string,
  rotaFlags: readonly string[],
): Promise<Forward[]> {
  const all: Forward[] = [{ name: 'direct', port: squid.ports[0]!, pid: squid.pid, stop: async () => {} }];
  try {
    const rota = await startRotaForward(
      { name: 'forward', workDir, nofile: NOFILE, nodeFlags: rotaFlags },
      squid.ports,
    );
    all.push({ name: 'rota', port: rota.proxyPort, pid: rota.proc.pid, stop: rota.stop });
    for (const name of ['proxy-chain', 'relay'] as const) {
      const ref = await startReference(workDir, name === 'relay' ? 'forward-relay' : name, squid.ports);
      all.push({ name, port: ref.port, pid: ref.pid, stop: ref.stop });
    }
    for (const f of all) await probeForward(f, url);
  } catch (e) {
    await Promise.all(all.map((f) => f.stop()));
    throw e;
  }
  return all;
}
