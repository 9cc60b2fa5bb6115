import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { childPids, countInLog, type Server, startNginxLb, startRedisServer } from '../lib/cluster-kit.ts';
import type { Ctx } from '../lib/context.ts';
import { startRotaNoListeners } from '../lib/pool-tools.ts';
import { sleep } from '../lib/proc.ts';
import { addProxies, api, type Rota } from '../lib/rota.ts';

/**
 * One shape of workload 10: `instances` Rota processes (each with `workers` workers) behind nginx, with
 * or without Redis, on one SQLite file or each on its own memory store. Every shape starts afresh: a new
 * redis-server, a new copy of the pool file, new Rota processes, a new nginx.
 */
export interface Shape {
  readonly key: string;
  readonly title: string;
  readonly instances: number;
  readonly workers: number;
  readonly store: 'memory' | 'sqlite';
  readonly redis: boolean;
}

const shape = (key: string, title: string, instances: number, workers: number, shared: boolean): Shape => ({
  key,
  title,
  instances,
  workers,
  store: shared || key === 'sqlite' ? 'sqlite' : 'memory',
  redis: shared,
});

/**
 * In the order they run: the one-instance shared shape and the memory yardstick alternate three times.
 * Why three: two runs of the very same memory shape differed by 10-20% in req/s and CPU per call on these
 * 2 shared cores (JIT and GC timing), more than the 15% the target allows; the target compares medians.
 */
export const SHAPES: readonly Shape[] = [
  shape('memory-1', '1 instance, memory store, no Redis (1st)', 1, 1, false),
  shape('sqlite', '1 instance, SQLite, no Redis', 1, 1, false),
  shape('shared-1x1', '1 instance, SQLite + Redis (1st)', 1, 1, true),
  shape('memory-2', '1 instance, memory store, no Redis (2nd)', 1, 1, false),
  shape('shared-1x1-2', '1 instance, SQLite + Redis (2nd)', 1, 1, true),
  shape('memory-3', '1 instance, memory store, no Redis (3rd)', 1, 1, false),
  shape('shared-1x1-3', '1 instance, SQLite + Redis (3rd)', 1, 1, true),
  shape('shared-2x1', '2 instances, SQLite + Redis', 2, 1, true),
  shape('shared-3x1', '3 instances, SQLite + Redis', 3, 1, true),
  shape('shared-1x2', '1 instance × 2 workers, SQLite + Redis', 1, 2, true),
  shape('shared-2x2', '2 instances × 2 workers, SQLite + Redis', 2, 2, true),
  shape('shared-3x2', '3 instances × 2 workers, SQLite + Redis', 3, 2, true),
];

export interface Cluster {
  readonly base: string;
  readonly instances: readonly Rota[];
  /** Every Rota process: each instance, and its workers when it has any. */
  pids(): number[];
  /** The redis-server of the shape, if it has one. */
  readonly redisPid: number | null;
  stop(): Promise<void>;
}

/** The pool (the 10 squid ports) written once into a SQLite file that every shape starts from a copy of. */
export async function poolTemplate(ctx: Ctx, ports: readonly number[]): Promise<string> {
  const dir = join(ctx.workDir, 'shared');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, 'template.db');
  const rota = await startRotaNoListeners(ctx, 'shared-template', { ROTA_STORAGE_PATH: path });
  try {
    await addProxies(
      rota.base,
      ports.map((p) => ({ url: `http://127.0.0.1:${p}` })),
    );
  } finally {
    await rota.stop();
  }
  return path;
}

function copyPool(template: string, key: string): string {
  const path = join(template, '..', `${key}.db`);
  for (const suffix of ['', '.key', '-wal', '-shm']) {
    rmSync(`${path}${suffix}`, { force: true });
    if (existsSync(`${template}${suffix}`)) copyFileSync(`${template}${suffix}`, `${path}${suffix}`);
  }
  return path;
}

/** With ROTA_WORKERS, /ready answers once one worker listens: wait for every worker's "listening" line. */
async function allWorkersUp(rota: Rota, workers: number, before: number): Promise<void> {
  const until = Date.now() + 30_000;
  while (countInLog(rota.proc.logPath, 'Server listening') - before < workers) {
    if (Date.now() > until) throw new Error(`not every worker started: see ${rota.proc.logPath}`);
    await sleep(50);
  }
}

async function startInstance(ctx: Ctx, s: Shape, i: number, env: Record<string, string>): Promise<Rota> {
  const name = `shared-${s.key}-${i}`;
  const logPath = join(ctx.workDir, 'logs', `rota-${name}.log`);
  const before = countInLog(logPath, 'Server listening');
  const rota = await startRotaNoListeners(ctx, name, { ...env, ROTA_WORKERS: String(s.workers) });
  if (s.workers > 1) await allWorkersUp(rota, s.workers, before);
  return rota;
}

export async function startCluster(
  ctx: Ctx,
  s: Shape,
  template: string,
  ports: readonly number[],
): Promise<Cluster> {
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const f of stops.reverse()) await f();
  };
  try {
    const env: Record<string, string> = {};
    let redisPid: number | null = null;
    if (s.redis) {
      const redis: Server = await startRedisServer(ctx.workDir, `redis-${s.key}`);
      stops.push(() => redis.proc.stop());
      env.ROTA_REDIS_URL = redis.url;
      redisPid = redis.proc.pid;
    }
    if (s.store === 'sqlite') env.ROTA_STORAGE_PATH = copyPool(template, s.key);
    const instances: Rota[] = [];
    for (let i = 0; i < s.instances; i++) {
      const rota = await startInstance(ctx, s, i, env);
      stops.push(() => rota.stop());
      instances.push(rota);
    }
    if (s.store === 'memory') {
      for (const r of instances)
        await addProxies(
          r.base,
          ports.map((p) => ({ url: `http://127.0.0.1:${p}` })),
        );
    }
    const lbPorts = instances.map((r) => Number(new URL(r.base).port));
    const nginx = await startNginxLb(ctx.workDir, `nginx-${s.key}`, lbPorts);
    stops.push(() => nginx.proc.stop());
    await probeAll(nginx.url, ctx.target.jsonUrl, s.instances * s.workers * 2);
    const pids = () => instances.flatMap((r) => [r.proc.pid, ...childPids(r.proc.pid)]);
    return { base: nginx.url, instances, pids, redisPid, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** A few calls through nginx, so that every instance has served one before the warm-up. */
async function probeAll(base: string, targetUrl: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const r = await api(base, 'POST', '/api/v1/request', { url: targetUrl, method: 'GET' });
    const code = (r.json as { data?: { status_code?: number } }).data?.status_code;
    if (r.status !== 200 || code !== 200) throw new Error(`probe through nginx answered ${r.status}`);
  }
}
