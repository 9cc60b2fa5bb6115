import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canConnect, freePort } from './real-proxies.ts';

/**
 * A throwaway redis-server (Debian's package) on a free loopback port, with no persistence, started in
 * a temp folder. `stop()` kills it (a Redis outage); `start()` brings it back on the same port.
 * scripts/system-deps.sh installs the package; a missing binary fails loudly.
 */
export interface TestRedis {
  readonly port: number;
  readonly url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  close(): Promise<void>;
}

const BIN = '/usr/bin/redis-server';

export async function startRedis(): Promise<TestRedis> {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: install redis-server (scripts/system-deps.sh)`);
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'rota-redis-'));
  let child: ChildProcess | null = null;
  const start = async () => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    child = spawn(BIN, [...args, '--dir', dir, '--logfile', ''], { stdio: 'ignore' });
    const until = Date.now() + 10_000;
    while (!(await canConnect(port))) {
      if (Date.now() > until || child.exitCode !== null) throw new Error('redis-server did not start');
      await new Promise((r) => setTimeout(r, 30));
    }
  };
  const stop = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null) return;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await gone;
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    stop,
    close: async () => {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
