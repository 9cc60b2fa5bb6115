import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { canConnect, freePort, must, run, startProcess, waitUntil } from './proc.ts';
import type { Ctx } from './report.ts';
import { addProxies, isReady, ROOT, startRotaForward, withNofile } from './rota.ts';
import { connectProxy, get, openTunnel } from './tunnel-wire.ts';

/**
 * The references Rota is measured against, each in a process of its own on loopback (BENCHMARKS.md,
 * "Method"): proxywhirl (PyPI, in bench/.venv) for the REST call; the scripts of bench/reference for the
 * floor and the listener; squid itself as the direct path.
 */
export const PROXYWHIRL_VERSION = '0.3.3';
const VENV = join(ROOT, 'bench', '.venv');
const PYTHON = join(VENV, 'bin', 'python');
/** Descriptors for every forward proxy: a tunnel load holds two per tunnel. */
const NOFILE = 65_536;
type Log = (m: string) => void;

/** `pkgs` from PyPI into the venv `dir` (git-ignored, made when missing) unless `has()` holds already. */
export async function pipInstall(dir: string, pkgs: string[], has: () => Promise<boolean>, log: Log) {
  if (await has()) return;
  log(`installing ${pkgs[0]} into ${relative(ROOT, dir)} (pip)...`);
  if (!existsSync(join(dir, 'bin', 'python'))) await must('python3', ['-m', 'venv', dir]);
  await must(join(dir, 'bin', 'pip'), ['install', '-q', '--disable-pip-version-check', ...pkgs]);
  if (!(await has())) throw new Error(`pip install ${pkgs[0]} did not install it`);
}

/** proxywhirl into bench/.venv, with uvicorn for its API server. */
export function ensureProxywhirl(log: Log): Promise<void> {
  const version = ['-c', "import importlib.metadata as m; print(m.version('proxywhirl'))"];
  const has = async () =>
    existsSync(PYTHON) && (await run(PYTHON, version)).stdout.trim() === PROXYWHIRL_VERSION;
  return pipInstall(VENV, [`proxywhirl==${PROXYWHIRL_VERSION}`, 'uvicorn'], has, log);
}

/**
 * proxywhirl's API under uvicorn through bench/proxywhirl_launcher.py (which lifts only its loopback
 * checks and its hard-coded 50/minute limit), API key on, `ports` added as its proxies.
 */
export async function startProxywhirl(workDir: string, ports: readonly number[], unavailable: string | null) {
  if (unavailable) throw new Error(unavailable);
  const [port, key] = [await freePort(), randomBytes(24).toString('hex')];
  const dataDir = join(workDir, 'proxywhirl');
  mkdirSync(dataDir, { recursive: true });
  const env = {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PROXYWHIRL_'))),
    PROXYWHIRL_REQUIRE_AUTH: 'true',
    PROXYWHIRL_API_KEY: key,
    PROXYWHIRL_RATE_LIMIT: '1000000/second',
    ...{ HOME: dataDir, XDG_DATA_HOME: dataDir, XDG_CACHE_HOME: dataDir },
  };
  const args = [join(ROOT, 'bench', 'proxywhirl_launcher.py'), String(port)];
  const logPath = join(workDir, 'logs', 'proxywhirl.log');
  const proc = startProcess('proxywhirl', PYTHON, args, { cwd: dataDir, env, logPath });
  const [base, headers] = [`http://127.0.0.1:${port}`, { 'X-API-Key': key }];
  await waitUntil(proc, 'proxywhirl', () => isReady(base), 60_000);
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
  readonly name: 'direct' | 'Rota' | 'proxy-chain' | 'forward relay';
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

/** One absolute-URI GET and one CONNECT with a GET inside, both answered 200, or it throws. */
async function probeForward(f: Forward, url: string): Promise<void> {
  const authority = new URL(url).host;
  const plain = connectProxy(f.port);
  const r = await get(plain, Buffer.alloc(0), authority, url, 10_000).finally(() => plain.destroy());
  if (r.status !== 200) throw new Error(`${f.name}: absolute-URI GET answered ${r.status}`);
  const t = await openTunnel(f.port, authority, 10_000);
  const r2 = await get(t.socket, t.rest, authority, '/json', 10_000).finally(() => t.socket.destroy());
  if (r2.status !== 200) throw new Error(`${f.name}: GET inside a CONNECT tunnel answered ${r2.status}`);
}

/** The four forward proxies, each probed; squid (direct) is shared and not stopped with the others. */
export async function startForwards(ctx: Ctx): Promise<Forward[]> {
  const { ports, proc } = ctx.squid;
  const all: Forward[] = [{ name: 'direct', port: ports[0]!, pid: proc.pid, stop: async () => {} }];
  try {
    const o = { name: 'forward', workDir: ctx.workDir, nofile: NOFILE, nodeFlags: ctx.rotaFlags };
    const rota = await startRotaForward(o, ports);
    all.push({ name: 'Rota', port: rota.proxyPort, pid: rota.proc.pid, stop: rota.stop });
    const refs = [
      ['proxy-chain', 'proxy-chain'],
      ['forward relay', 'forward-relay'],
    ] as const;
    for (const [name, script] of refs) {
      const ref = await startReference(ctx.workDir, script, ports);
      all.push({ name, port: ref.port, pid: ref.pid, stop: ref.stop });
    }
    for (const f of all) await probeForward(f, ctx.target.jsonUrl);
  } catch (e) {
    await Promise.all(all.map((f) => f.stop()));
    throw e;
  }
  return all;
}
