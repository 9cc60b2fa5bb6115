import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startRedis, type TestRedis } from './helpers/redis.ts';
import { type RunningServer, startServer } from './helpers/server.ts';

/*
 * ROTA_WORKERS=2: two worker processes on one port under a primary that restarts a worker that dies,
 * answers /metrics for the whole instance, and stops them all on SIGTERM.
 */

let redis: TestRedis;
let dir: string;
let server: RunningServer;

function workers(): number[] {
  const out = execFileSync('ps', ['-o', 'pid=', '--ppid', String(server.proc.pid)], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter((n) => n > 0);
}

async function until(check: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('not in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

before(async () => {
  redis = await startRedis();
  dir = await mkdtemp(join(tmpdir(), 'rota-workers-'));
  server = await startServer({
    ROTA_WORKERS: '2',
    ROTA_REDIS_URL: redis.url,
    ROTA_STORAGE_PATH: join(dir, 'rota.db'),
    ROTA_RATE_LIMIT: '100000/minute',
  });
});

after(async () => {
  await server.stop('SIGKILL');
  await redis.close();
  await rm(dir, { recursive: true, force: true });
});

test('two workers serve one port; /metrics counts both; a dead worker is replaced; SIGTERM stops all', async () => {
  await until(() => workers().length === 2, 10_000);
  // Both workers ready (each answers /ready only once its pool is loaded); a fresh connection each
  // time, so that the primary spreads them over both workers.
  const fresh = { headers: { connection: 'close' } };
  for (let i = 0; i < 40; i++) assert.equal((await fetch(`${server.url}/api/v1/ready`, fresh)).status, 200);
  const text = await (await fetch(`${server.url}/metrics`, fresh)).text();
  const ready = [
    ...text.matchAll(/rota_requests_total\{endpoint="\/api\/v1\/ready",method="GET",status="200"\} (\d+)/g),
  ];
  const total = ready.reduce((n, m) => n + Number(m[1]), 0);
  assert.ok(total >= 40, `every worker's requests are counted: ${total}`);
  const [first] = workers();
  process.kill(first ?? 0, 'SIGKILL');
  await until(() => workers().length === 2 && !workers().includes(first ?? 0), 10_000);
  await until(
    async () => (await fetch(`${server.url}/api/v1/ready`).catch(() => null))?.status === 200,
    10_000,
  );
  const pids = workers();
  const exit = await server.stop('SIGTERM');
  assert.equal(exit.code, 0);
  for (const pid of pids) assert.throws(() => process.kill(pid, 0), 'every worker is gone');
});
