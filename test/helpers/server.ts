import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const READY_TIMEOUT_MS = 20_000;
const OUTPUT_LIMIT = 64 * 1024;

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface RunningServer {
  /** e.g. http://127.0.0.1:41234 */
  readonly url: string;
  readonly port: number;
  readonly proc: ChildProcess;
  /** What the process wrote so far (bounded), for assertions and failure messages. */
  output(): string;
  /** Sends the signal (default SIGTERM) and resolves once the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<ExitInfo>;
}

// Whatever a test forgets to stop must not outlive the test run.
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

/** A port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const addr = srv.address();
  srv.close();
  await once(srv, 'close');
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  return addr.port;
}

/**
 * Starts the real server (`node src/main.ts`, or the production build with `script: 'dist/main.js'`)
 * and resolves once `/api/v1/ready` answers 200. TEST_SERVER_SCRIPT=dist/main.js runs every test that
 * starts one against the build instead (the build bundles most packages: a check that none of them
 * broke in the bundle). ROTA_* variables of the calling environment are not
 * passed on, so a test sees only the config it gives.
 */
export async function startServer(
  env: Readonly<Record<string, string>> = {},
  opts: {
    readonly script?: string;
    /** A command that execs Node in its own place (same pid), e.g. `['prlimit', '--nofile=256:256', '--']`. */
    readonly prefix?: readonly string[];
  } = {},
): Promise<RunningServer> {
  for (let attempt = 1; ; attempt++) {
    const port = env.ROTA_PORT === undefined ? await freePort() : Number(env.ROTA_PORT);
    const script = opts.script ?? process.env.TEST_SERVER_SCRIPT ?? 'src/main.ts';
    const server = spawnServer(port, env, script, opts.prefix ?? []);
    try {
      await waitReady(server);
      return server;
    } catch (e) {
      await server.stop('SIGKILL');
      // Another process may have taken the port between freePort() and listen().
      const retry = env.ROTA_PORT === undefined && attempt < 3 && server.output().includes('EADDRINUSE');
      if (!retry) throw e;
    }
  }
}

function spawnServer(
  port: number,
  env: Readonly<Record<string, string>>,
  script: string,
  prefix: readonly string[],
): RunningServer {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ROTA_')));
  const [command, ...args] = [...prefix, process.execPath, script];
  const proc = spawn(command!, args, {
    cwd: ROOT,
    // The listeners are off unless a test asks for them: their default ports would collide between servers.
    env: {
      ...base,
      ROTA_HOST: '127.0.0.1',
      ROTA_LOG_LEVEL: 'warn',
      ROTA_PROXY_PORT: '0',
      ROTA_SOCKS_PORT: '0',
      ...env,
      ROTA_PORT: String(port),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(proc);
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-OUTPUT_LIMIT);
  };
  proc.stdout?.on('data', collect);
  proc.stderr?.on('data', collect);
  const exited = new Promise<ExitInfo>((resolve) => {
    proc.once('exit', (code, signal) => {
      live.delete(proc);
      resolve({ code, signal });
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    proc,
    output: () => output,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}

async function waitReady(server: RunningServer): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const { proc } = server;
    if (proc.exitCode !== null || proc.signalCode !== null) {
      throw new Error(
        `server exited (${proc.exitCode ?? proc.signalCode}) before ready:\n${server.output()}`,
      );
    }
    try {
      const res = await fetch(`${server.url}/api/v1/ready`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`server not ready after ${READY_TIMEOUT_MS} ms:\n${server.output()}`);
}
