import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
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
export function isInterrupted(): boolean {
  return interrupted;
}

function refuseIfInterrupted(what: string): void {
  if (interrupted) throw new Error(`interrupted: not starting ${what}`);
}

export interface StartOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** stdout and stderr go here (appended), so that a failed start can be explained. */
  readonly logPath: string;
}

export function startProcess(name: string, cmd: string, args: readonly string[], o: StartOptions): Proc {
  refuseIfInterrupted(name);
  mkdirSync(dirname(o.logPath), { recursive: true });
  const fd = openSync(o.logPath, 'a');
  let child: ChildProcess;
  try {
    child = spawn(cmd, args, {
      cwd: o.cwd,
      env: o.env ?? process.env,
      detached: true,
      stdio: ['ignore', fd, fd],
    });
  } finally {
    closeSync(fd);
  }
  let done = false;
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => {
      done = true;
      resolve(signal ?? String(code));
    });
    child.once('error', (e) => {
      done = true;
      resolve(`spawn error: ${e.message}`);
    });
  });
  const pid = child.pid ?? -1;
  const proc: Proc = {
    name,
    pid,
    logPath: o.logPath,
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
  return proc;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** The harness and every process it runs right now: CPU they use is ours, the rest is someone else's. */
export function ourPids(): number[] {
  return [process.pid, ...[...live].filter((p) => !p.hasExited()).map((p) => p.pid)];
}

export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((p) => p.stop()));
}

/** Last resort from an `exit` handler, where nothing can be awaited. */
function killAllNow(): void {
  for (const p of live) if (!p.hasExited()) signalGroup(p.pid, 'SIGKILL');
  live.clear();
}

let installed = false;

/** Stops every child on Ctrl-C, SIGTERM, an uncaught error, or any other way out of the harness. */
export function installCleanup(log: (msg: string) => void): void {
  if (installed) return;
  installed = true;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupted = true;
    log(`\n${signal}: stopping every process the benchmark started...`);
    void stopAll().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.once('exit', killAllNow);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A port that was free a moment ago (the kernel picks it; the race with other programs is tiny). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const addr = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (addr === null || typeof addr === 'string') throw new Error('no free port');
  return addr.port;
}

export async function freePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Runs a command to completion and returns its output (for wrk, pip, apt-get, version probes). */
export function run(
  cmd: string,
  args: readonly string[],
  o: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  if (interrupted) return Promise.resolve({ code: null, stdout: '', stderr: 'interrupted' });
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: o.cwd, env: o.env ?? process.env, detached: true });
    const tracked: Proc = {
      name: cmd,
      pid: child.pid ?? -1,
      logPath: '',
      exited: new Promise(() => {}),
      hasExited: () => child.exitCode !== null || child.signalCode !== null,
      stop: async () => {
        live.delete(tracked);
        if (child.pid && child.exitCode === null) signalGroup(child.pid, 'SIGKILL');
      },
    };
    live.add(tracked);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (b: Buffer) => {
      stdout += b.toString('utf8');
    });
    child.stderr?.on('data', (b: Buffer) => {
      stderr += b.toString('utf8');
    });
    const timer = o.timeoutMs ? setTimeout(() => void tracked.stop(), o.timeoutMs) : null;
    const finish = (code: number | null, extra = '') => {
      if (timer) clearTimeout(timer);
      live.delete(tracked);
      resolve({ code, stdout, stderr: stderr + extra });
    };
    child.once('error', (e) => finish(null, e.message));
    child.once('close', (code) => finish(code));
  });
}
