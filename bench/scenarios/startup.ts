import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { median, waitForQuiet } from '../lib/measure.ts';
import { populatedDatabase } from '../lib/populate.ts';
import { run, sleep, startProcess } from '../lib/proc.ts';
import { alone, type Ctx, type ScenarioResult, versus } from '../lib/report.ts';
import { listenerEnv, startRota } from '../lib/rota.ts';

/**
 * Start-up and memory of Rota as `npm start` runs it once built (`node <its flags> dist/main.js`,
 * spawned directly so that the time is Rota's own, both listeners on free ports): spawn to the first 200
 * of /api/v1/ready, 5 starts each with an empty memory store and with `poolSize` proxies (username and
 * password each) in SQLite, written once by Rota's own store module; idle RSS 3 s after ready (the start
 * with the median RSS). References: an empty Node process (its RSS; `node -e 0`, spawn to exit).
 */
const STARTS = 5;
const SETTLE_MS = 3_000;

/** RSS of a process from /proc/<pid>/smaps_rollup, MB. */
function rssMb(pid: number): number {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  return Number(/^Rss:\s+(\d+) kB/m.exec(text)?.[1] ?? Number.NaN) / 1024;
}

async function starts(ctx: Ctx, name: string, env: Record<string, string>, count = STARTS) {
  const [readyMs, rss]: [number[], number[]] = [[], []];
  await waitForQuiet(ctx.patient ? 120 : 0, ctx.log);
  for (let i = 0; i < count; i++) {
    const o = { name, workDir: ctx.workDir, direct: true, nodeFlags: ctx.rotaFlags };
    const rota = await startRota({ ...o, env: { ...(await listenerEnv()), ...env } });
    try {
      readyMs.push(rota.readyMs);
      await sleep(SETTLE_MS);
      rss.push(rssMb(rota.proc.pid));
    } finally {
      await rota.stop();
    }
  }
  return { readyMs, rssMb: rss, medianReadyMs: median(readyMs), medianRssMb: median(rss) };
}

async function bareNode(ctx: Ctx) {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    await run(process.execPath, ['-e', '0']);
    times.push(performance.now() - t0);
  }
  const logPath = join(ctx.workDir, 'logs', 'bare-node.log');
  const proc = startProcess('bare-node', process.execPath, ['-e', 'setInterval(()=>{},1e9)'], { logPath });
  try {
    await sleep(1_000 + SETTLE_MS);
    return { startMs: median(times), rssMb: rssMb(proc.pid) };
  } finally {
    await proc.stop();
  }
}

export async function startup(ctx: Ctx): Promise<ScenarioResult> {
  ctx.log(`  start-up: empty memory store (${STARTS} starts), an empty Node process`);
  const empty = await starts(ctx, 'start-empty', {});
  const bare = await bareNode(ctx);
  const db = await populatedDatabase(ctx.workDir, ctx.poolSize, ctx.log);
  ctx.log(`  start-up: ${ctx.poolSize} proxies in SQLite (${STARTS} starts), an empty SQLite file`);
  const full = await starts(ctx, 'start-sqlite', { ROTA_STORAGE_PATH: db });
  const emptyPath = join(ctx.workDir, 'empty.db');
  for (const f of ['', '.key', '-wal', '-shm']) rmSync(`${emptyPath}${f}`, { force: true });
  const emptyDb = await starts(ctx, 'start-sqlite-empty', { ROTA_STORAGE_PATH: emptyPath }, 1);
  const perProxyKb = ((full.medianRssMb - emptyDb.medianRssMb) * 1024) / ctx.poolSize;
  const S = 'Start-up and memory';
  const n = ctx.poolSize.toLocaleString('en-US');
  return {
    rows: [
      alone(S, 'start-up ms, empty store (median of 5)', empty.medianReadyMs, { max: 500 }),
      versus(S, 'start-up ms, empty store (median of 5)', empty.medianReadyMs, 'node -e 0', bare.startMs),
      alone(S, `start-up ms, ${n} proxies in SQLite`, full.medianReadyMs, { max: 1500 }),
      alone(S, 'idle RSS MB, empty store', empty.medianRssMb, { max: 100 }),
      versus(S, 'idle RSS MB, empty store', empty.medianRssMb, 'empty Node process', bare.rssMb),
      alone(S, `RSS KB per proxy, ${n} in SQLite`, perProxyKb, { max: 1 }),
    ],
    raw: { empty, bare, full, emptyDb, perProxyKb },
  };
}
