import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A loopback port nobody listens on right now. */
export async function freeLoopbackPort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const addr = srv.address();
  srv.close();
  await once(srv, 'close');
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  return addr.port;
}

export interface RunningRota {
  readonly base: string;
  readonly port: number;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts `node src/main.ts` as `npm start` does, with only the given ROTA_* variables (the caller's own
 * ROTA_* environment must not leak in), and waits until it answers HTTP.
 */
export async function spawnRota(env: Record<string, string>): Promise<RunningRota> {
  const port = await freeLoopbackPort();
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ROTA_')));
  const child = spawn(process.execPath, ['src/main.ts'], {
    cwd: ROOT,
    env: { ...inherited, ROTA_HOST: '127.0.0.1', ROTA_PORT: String(port), ROTA_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => {
    out += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    out += c.toString();
  });
  const base = `http://127.0.0.1:${port}`;
  const running: RunningRota = { base, port, output: () => out, stop: () => stopChild(child) };
  try {
    await waitForHttp(child, `${base}/api/v1/health`, () => out);
  } catch (e) {
    await running.stop();
    throw e;
  }
  return running;
}

async function waitForHttp(child: ChildProcess, url: string, output: () => string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`rota exited with ${child.exitCode}:\n${output()}`);
    try {
      await fetch(url, { signal: AbortSignal.timeout(1_000) });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`rota did not answer on ${url} within 15 s:\n${output()}`);
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

export interface TrapProxy {
  /** `http://127.0.0.1:<port>`, for the browser's proxy setting. */
  readonly server: string;
  /** First request line of every connection the browser tried to make off loopback. */
  readonly attempts: string[];
  close(): Promise<void>;
}

/**
 * A proxy that forwards nothing. Pointing the browser at it (loopback bypasses proxies) makes every
 * request for anywhere else, including the browser's own background traffic and DNS-by-proxy, land
 * here, where it is recorded and refused.
 */
export async function startTrapProxy(): Promise<TrapProxy> {
  const attempts: string[] = [];
  const open = new Set<Socket>();
  const srv: Server = createServer((sock) => {
    open.add(sock);
    sock.on('close', () => open.delete(sock));
    sock.once('data', (chunk: Buffer) => {
      attempts.push(chunk.toString('latin1').split('\r\n', 1)[0] ?? '');
      sock.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    });
    sock.on('error', () => {});
  });
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const addr = srv.address();
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  return {
    server: `http://127.0.0.1:${addr.port}`,
    attempts,
    close: async () => {
      for (const sock of open) sock.destroy();
      srv.close();
      await once(srv, 'close');
    },
  };
}
