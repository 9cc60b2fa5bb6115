import http from 'node:http';
import type { Ctx } from '../lib/context.ts';
import { foreignNote } from '../lib/cpu.ts';
import { populatedDatabase } from '../lib/populate.ts';
import {
  type Cell,
  check,
  failedCell,
  type Row,
  type TargetCheck,
  type WorkloadOutput,
} from '../lib/report.ts';
import { type Rota, startRota } from '../lib/rota.ts';
import { MB, RssWatch, readRss } from '../lib/rss.ts';
import { wrk } from '../lib/wrk.ts';

interface Figures {
  startEmptyMs: Cell;
  startEmptyMaxMs: Cell;
  idleEmptyRssMb: Cell;
  startMs: Cell;
  startMaxMs: Cell;
  idleRssMb: Cell;
  rotateP50: Cell;
  rotateP99: Cell;
  pageP50: Cell;
  pageP99: Cell;
  exportAddedMb: Cell;
  exportS: Cell;
  exportLines: Cell;
  notes: string[];
}

/** Reads the whole NDJSON export as a fast client would, counting lines; nothing is kept. */
function readExport(base: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(`${base}/api/v1/proxies/export`, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`export answered ${res.statusCode}`));
          return;
        }
        let lines = 0;
        res.on('data', (chunk: Buffer) => {
          for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
        });
        res.once('end', () => resolve(lines));
        res.once('error', reject);
      })
      .once('error', reject);
  });
}

async function latency(base: string, path: string, durationS: number) {
  return wrk({ url: `${base}${path}`, connections: 1, durationS, timeoutS: 10 });
}

/** Page 500 of 50 is the 25,000th proxy of 100,000; a smaller --quick pool gets the same relative page. */
export function pageFor(n: number): number {
  return Math.max(1, Math.round((500 * n) / 100_000));
}

async function measureLoaded(ctx: Ctx, rota: Rota, f: Figures): Promise<void> {
  const durationS = Math.min(ctx.loadS, 10);
  await new Promise((r) => setTimeout(r, 1000));
  f.idleRssMb = (readRss(rota.proc.pid)?.rss ?? 0) / MB;
  const pagePath = `/api/v1/proxies?page=${pageFor(ctx.scaleProxies)}`;
  ctx.log(`  scale: GET rotate, then GET ${pagePath} (1 connection, ${durationS} s each)`);
  await latency(rota.base, '/api/v1/rotate', ctx.warmS);
  const rotate = await latency(rota.base, '/api/v1/rotate', durationS);
  f.rotateP50 = rotate.p50Ms;
  f.rotateP99 = rotate.p99Ms;
  await latency(rota.base, pagePath, ctx.warmS);
  const page = await latency(rota.base, pagePath, durationS);
  f.pageP50 = page.p50Ms;
  f.pageP99 = page.p99Ms;
  if (rotate.errors.status + page.errors.status > 0) throw new Error('rotate or page answered errors');
  f.notes.push(
    ...foreignNote('5. GET rotate', rotate.foreignCpu),
    ...foreignNote('5. GET proxies page', page.foreignCpu),
  );
  ctx.log('  scale: streaming GET proxies/export');
  const watch = new RssWatch(rota.proc.pid);
  const t0 = performance.now();
  const lines = await readExport(rota.base);
  f.exportS = (performance.now() - t0) / 1000;
  f.exportAddedMb = (watch.stop() - watch.before) / MB;
  f.exportLines = lines;
}

/** Start-up time varies by a few hundred ms from one start to the next: the median of three is reported. */
const STARTS = 3;

/** Starts Rota STARTS times; every instance but the last is stopped at once, the last is returned. */
async function startRepeatedly(ctx: Ctx, name: string, env: Record<string, string>) {
  const times: number[] = [];
  for (let i = 0; ; i++) {
    const rota = await startRota({ name, workDir: ctx.workDir, nodeFlags: ctx.rotaNodeFlags, env });
    times.push(rota.readyMs);
    if (i === STARTS - 1) {
      times.sort((a, b) => a - b);
      return { rota, medianMs: times[Math.floor(times.length / 2)]!, maxMs: times[times.length - 1]! };
    }
    await rota.stop();
  }
}

export async function runScale(ctx: Ctx): Promise<WorkloadOutput> {
  const n = ctx.scaleProxies;
  const na = { failed: 'not run' };
  const f: Figures = {
    startEmptyMs: na,
    startEmptyMaxMs: na,
    idleEmptyRssMb: na,
    startMs: na,
    startMaxMs: na,
    idleRssMb: na,
    rotateP50: na,
    rotateP99: na,
    pageP50: na,
    pageP99: na,
    exportAddedMb: na,
    exportS: na,
    exportLines: na,
    notes: [],
  };
  const notes: string[] = [];
  let rota: Rota | null = null;
  try {
    const empty = await startRepeatedly(ctx, 'scale-empty', {});
    f.startEmptyMs = empty.medianMs;
    f.startEmptyMaxMs = empty.maxMs;
    await new Promise((r) => setTimeout(r, 1000));
    f.idleEmptyRssMb = (readRss(empty.rota.proc.pid)?.rss ?? 0) / MB;
    await empty.rota.stop();
    const db = await populatedDatabase(ctx.workDir, n, ctx.log);
    ctx.log(`  scale: starting Rota on SQLite with ${n} proxies (${STARTS} times)`);
    const loaded = await startRepeatedly(ctx, 'scale', { ROTA_STORAGE_PATH: db });
    rota = loaded.rota;
    f.startMs = loaded.medianMs;
    f.startMaxMs = loaded.maxMs;
    await measureLoaded(ctx, rota, f);
    if (f.exportLines !== n)
      notes.push(`5. Pool scale: the export had ${String(f.exportLines)} lines, expected ${n}.`);
  } catch (e) {
    const failed = failedCell(e);
    for (const k of Object.keys(f) as (keyof Figures)[]) if (k !== 'notes' && f[k] === na) f[k] = failed;
  } finally {
    await rota?.stop();
  }
  return { rows: rows(n, f), targets: targets(n, f), notes: [...notes, ...f.notes] };
}

function rows(n: number, f: Figures): Row[] {
  const w = `5. Pool scale (${n.toLocaleString('en-US')} proxies, SQLite)`;
  const r = (metric: string, decimals: number, rota: Cell): Row => ({ workload: w, metric, decimals, rota });
  return [
    r(`start-up, spawn → ready 200, ms (median of ${STARTS})`, 0, f.startMs),
    r(`start-up, slowest of ${STARTS}, ms`, 0, f.startMaxMs),
    r(`start-up with an empty memory store, ms (median of ${STARTS})`, 0, f.startEmptyMs),
    r(`start-up with an empty memory store, slowest of ${STARTS}, ms`, 0, f.startEmptyMaxMs),
    r('idle RSS after start-up, empty pool, MB', 1, f.idleEmptyRssMb),
    r('idle RSS with the pool loaded, MB', 1, f.idleRssMb),
    r('GET rotate p50, ms', 3, f.rotateP50),
    r('GET rotate p99, ms', 3, f.rotateP99),
    r(`GET proxies?page=${pageFor(n)} p50, ms`, 3, f.pageP50),
    r(`GET proxies?page=${pageFor(n)} p99, ms`, 3, f.pageP99),
    r('export: RSS added while streaming, MB', 1, f.exportAddedMb),
    r('export: time to stream every proxy, s', 2, f.exportS),
  ];
}

function targets(n: number, f: Figures): TargetCheck[] {
  const at =
    n === 100_000
      ? '100,000 proxies'
      : `${n.toLocaleString('en-US')} proxies (--quick; target is at 100,000)`;
  const ms = (v: number) => `${v.toFixed(3)} ms`;
  return [
    check(`GET rotate p50 < 1 ms at ${at}`, f.rotateP50, (v) => v < 1, ms),
    check(
      `Start-up with ${at} in SQLite < 3 s`,
      f.startMs,
      (v) => v < 3000,
      (v) => `${(v / 1000).toFixed(2)} s`,
    ),
    check(`GET proxies?page=${pageFor(n)} p50 < 5 ms at ${at}`, f.pageP50, (v) => v < 5, ms),
    check(
      `NDJSON export adds < 50 MB of RSS at ${at}`,
      f.exportAddedMb,
      (v) => v < 50,
      (v) => `${v.toFixed(1)} MB`,
    ),
  ];
}
