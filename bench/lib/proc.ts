import { type StdioOptions, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import net from 'node:net';
import { dirname } from 'node:path';

/**
 * Every process the harness starts is registered here and stopped at the end, also on Ctrl-C or on an
 * error: a benchmark that leaves squid or a gateway behind would skew the next run. Each child gets its
 * own process group so that its helpers (squid's kids, uvicorn's) go with it, and only those groups are
 * signalled, never processes found by name.
 */
export interface Proc {
  readonly name: string;
  readonly pid: number;
  readonly logPath: string;
  /** Resolves with the exit code (or the signal name) once the process has gone. */
  readonly exited: Promise<string>;
  readonly hasExited: () => boolean;
  stop(): Promise<void>;
}

const live = new Set<Proc>();
let interrupted = false;

/** True once Ctrl-C or SIGTERM arrived: nothing new is started and no report is written. */
export const isInterrupted = () => interrupted;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, signal);
      return;
    } catch {
      // no such group (or already gone): try the process itself
    }
  }
}

interface SpawnOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  readonly logPath?: string;
  readonly timeoutMs?: number;
}

function track(name: string, cmd: string, args: readonly string[], o: SpawnOptions, stdio: StdioOptions) {
  if (interrupted) throw new Error(`interrupted: not starting ${name}`);
  const child = spawn(cmd, args, { cwd: o.cwd, env: o.env ?? process.env, detached: true, stdio });
  let done = false;
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => resolve(signal ?? String(code)));
    child.once('error', (e) => resolve(`spawn error: ${e.message}`));
  }).finally(() => {
    done = true;
  });
  const pid = child.pid ?? -1;
  const proc: Proc = {
    name,
    pid,
    logPath: o.logPath ?? '',
    exited,
    hasExited: () => done,
    stop: async () => {
      live.delete(proc);
      if (done || pid <= 0) return;
      signalGroup(pid, 'SIGTERM');
      const gone = await Promise.race([exited.then(() => true), sleep(5000).then(() => false)]);
      if (!gone) signalGroup(pid, 'SIGKILL');
      await Promise.race([exited, sleep(2000)]);
    },
  };
  live.add(proc);
  void exited.then(() => live.delete(proc));
  return { proc, child };
}

/** A long-running process (squid, a gateway); stdout and stderr appended to `logPath`. */
export function startProcess(
  name: string,
  cmd: string,
  args: readonly string[],
  o: SpawnOptions & { logPath: string },
): Proc {
  mkdirSync(dirname(o.logPath), { recursive: true });
  const fd = openSync(o.logPath, 'a');
  try {
    return track(name, cmd, args, o, ['ignore', fd, fd]).proc;
  } finally {
    closeSync(fd);
  }
}

/** Runs a command to completion and returns its output (wrk, the tunnel load, pip, apt-get, versions). */
export async function run(cmd: string, args: readonly string[], o: SpawnOptions = {}) {
  if (interrupted) return { code: null as number | null, stdout: '', stderr: 'interrupted' };
  const { proc, child } = track(cmd, cmd, args, o, ['ignore', 'pipe', 'pipe']);
  const [out, err]: [Buffer[], Buffer[]] = [[], []];
  child.stdout?.on('data', (b: Buffer) => out.push(b));
  child.stderr?.on('data', (b: Buffer) => err.push(b));
  const timer = o.timeoutMs ? setTimeout(() => void proc.stop(), o.timeoutMs) : null;
  const code = await new Promise<number | null>((resolve) => {
    child.once('close', resolve);
    child.once('error', (e) => {
      err.push(Buffer.from(e.message));
      resolve(null);
    });
  });
  if (timer) clearTimeout(timer);
  return { code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}

/** `run` (15 min at most by default) that throws with the end of the output unless it exits 0; its stdout. */
export async function must(cmd: string, args: readonly string[], o: SpawnOptions = {}): Promise<string> {
  const r = await run(cmd, args, { timeoutMs: 900_000, ...o });
  if (r.code !== 0) throw new Error(`${cmd} ${args[0]} failed: ${(r.stderr || r.stdout).trim().slice(-300)}`);
  return r.stdout;
}

/** Polls `ready` (every `pauseMs`) until it holds; stops `proc` and throws if it exits or `limitMs` passes. */
export async function waitUntil(proc: Proc, what: string, ready: Check, limitMs: number, pauseMs = 20) {
  const deadline = Date.now() + limitMs;
  while (!(await ready())) {
    if (proc.hasExited() || Date.now() > deadline) {
      const why = proc.hasExited() ? `exited (${await proc.exited})` : `not ready in ${limitMs / 1000} s`;
      await proc.stop();
      throw new Error(`${what} ${why}: see ${proc.logPath}`);
    }
    await sleep(pauseMs);
  }
}

type Check = () => Promise<boolean>;

/** Debian's `pkg` (providing `path`) installed with apt-get when missing and we are root; true if it was. */
export async function aptInstall(pkg: string, path: string, log: (m: string) => void): Promise<boolean> {
  if (existsSync(path)) return false;
  if (process.getuid?.() !== 0) throw new Error(`${path} is missing (not root): apt-get install ${pkg}`);
  log(`installing ${pkg} with apt-get...`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update', '-qq'], { env, timeoutMs: 300_000 });
  const args = ['install', '-y', '-qq', '--no-install-recommends', pkg];
  const r = await run('apt-get', args, { env, timeoutMs: 600_000 });
  if (!existsSync(path)) throw new Error(`apt-get install ${pkg} failed: ${r.stderr.slice(-300)}`);
  return true;
}

/** The harness and every process it runs right now: CPU they use is ours, the rest is someone else's. */
export function ourPids(): number[] {
  return [process.pid, ...[...live].filter((p) => !p.hasExited()).map((p) => p.pid)];
}

export const stopAll = () => Promise.all([...live].map((p) => p.stop()));

/** Stops every child on Ctrl-C, SIGTERM, an uncaught error, or any other way out of the harness. */
export function installCleanup(log: (msg: string) => void): void {
  const onSignal = (signal: NodeJS.Signals) => {
    interrupted = true;
    log(`\n${signal}: stopping every process the benchmark started...`);
    void stopAll().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // Last resort from an `exit` handler, where nothing can be awaited.
  process.once('exit', () => {
    for (const p of live) if (!p.hasExited()) signalGroup(p.pid, 'SIGKILL');
  });
}

/** A port that was free a moment ago (the kernel picks it; the race with other programs is tiny). */
export async function freePort(): Promise<number> {
  const server = await listen(net.createServer());
  await close(server);
  return server.port;
}

/** Listens on a free port of `host` (loopback); the server with its port. */
export async function listen<S extends net.Server>(server: S, host = '127.0.0.1') {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  return Object.assign(server, { port: (server.address() as net.AddressInfo).port });
}

export const close = (server: net.Server) => new Promise<void>((resolve) => server.close(() => resolve()));

export async function freePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

export async function canConnect(port: number): Promise<boolean> {
  const s = net.connect({ host: '127.0.0.1', port });
  const ok = new Promise<boolean>((r) => s.once('connect', () => r(true)).once('error', () => r(false)));
  return ok.finally(() => s.destroy());
}
