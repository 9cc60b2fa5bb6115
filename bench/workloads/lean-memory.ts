import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Ctx } from '../lib/context.ts';
import { ForeignCpuWatch, foreignNote, waitForQuiet } from '../lib/cpu.ts';
import { populatedDatabase } from '../lib/populate.ts';
import { run, sleep } from '../lib/proc.ts';
import { failedCell } from '../lib/report.ts';
import { ROOT, type Rota } from '../lib/rota.ts';
import {
  type Heap,
  heapOf,
  type Resident,
  resident,
  START_FLAGS,
  startBareNode,
  startRotaProd,
} from '../lib/rota-prod.ts';
import { ourTree } from '../lib/tree.ts';

/**
 * Workload 11's memory and start-up figures: idle RSS (split anonymous / file-backed) and V8's heap of
 * Rota as `npm start` runs it, next to an empty Node process, the same bundle without the semi-space
 * flag and the sources as the other workloads run them; start-up to /ready 200, empty and with the
 * pool-scale SQLite file loaded, 5 times each; what the wrapper and the build check add to `npm start`.
 */
export type Outcome<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly reason: string };

export interface Idle {
  readonly resident: Resident;
  readonly heap: Heap | null;
}

export interface Starts {
  /** Spawn → /ready 200, ms, in the order measured. */
  readonly readyMs: readonly number[];
  /** The idle figures of the start with the median RSS. */
  readonly idle: Idle;
}

export interface MemoryFigures {
  readonly bare: Outcome<Idle>;
  readonly prod: Outcome<Starts>;
  /** The same starts with ROTA_COMPILE_CACHE=off: every module compiled from source, as a first start. */
  readonly coldCache: Outcome<Starts>;
  /** `node dist/main.js` with no flags: Rota re-executes itself with them (one more Node boot). */
  readonly reexec: Outcome<Starts>;
  readonly noFlag: Outcome<Idle>;
  /** npm start's flags plus --enable-source-maps (what readable stack traces cost). */
  readonly sourceMaps: Outcome<Idle>;
  readonly source: Outcome<Idle>;
  readonly sqliteEmpty: Outcome<Idle>;
  readonly sqliteFull: Outcome<Starts>;
  readonly wrapper: Outcome<{ withNodeMs: number; buildCheckMs: number; bareNodeMs: number }>;
}

/** Idle means this long after /ready (timers of start-up done, first GCs passed). */
const SETTLE_MS = 3_000;
export const STARTS = 5;

async function idleOf(rota: Rota): Promise<Idle> {
  await sleep(SETTLE_MS);
  const r = resident(rota.proc.pid);
  return { resident: r, heap: await heapOf(rota.base) };
}

async function attempt<T>(ctx: Ctx, what: string, f: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await f() };
  } catch (e) {
    ctx.log(`  lean: ${what} failed: ${(e as Error).stack ?? e}`);
    return { ok: false, reason: failedCell(e).failed };
  }
}

async function once(
  ctx: Ctx,
  name: string,
  flags: readonly string[] | 'own',
  o: { script?: string; env?: Record<string, string> } = {},
) {
  const rota = await startRotaProd({ name, workDir: ctx.workDir, flags, ...o });
  try {
    return await idleOf(rota);
  } finally {
    await rota.stop();
  }
}

/**
 * STARTS fresh starts, each measured at rest; the machine must be quiet first (up to 2 min), and the
 * notes say when other programs took a noticeable share of the CPU during the series.
 */
async function starts(
  ctx: Ctx,
  name: string,
  env: Record<string, string>,
  notes: string[],
  flags: 'own' | 'reexec' = 'own',
): Promise<Starts> {
  const readyMs: number[] = [];
  const idles: Idle[] = [];
  await waitForQuiet(ctx.quick ? 0 : 120, ctx.log);
  const watch = new ForeignCpuWatch(ourTree);
  for (let i = 0; i < STARTS; i++) {
    const rota = await startRotaProd({ name, workDir: ctx.workDir, flags, env });
    try {
      readyMs.push(rota.readyMs);
      idles.push(await idleOf(rota));
    } finally {
      await rota.stop();
    }
  }
  notes.push(...foreignNote(`11. ${STARTS} starts (${name})`, watch.stop()));
  idles.sort((a, b) => a.resident.rssMb - b.resident.rssMb);
  return { readyMs, idle: idles[Math.floor(idles.length / 2)]! };
}

async function bare(ctx: Ctx): Promise<Idle> {
  const proc = await startBareNode(ctx.workDir);
  try {
    await sleep(SETTLE_MS);
    return { resident: resident(proc.pid), heap: null };
  } finally {
    await proc.stop();
  }
}

/** Median of 3 timings of a command run from the project root. */
async function timed(cmd: string, args: readonly string[]): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const r = await run(cmd, args, { cwd: ROOT, timeoutMs: 120_000 });
    if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr.slice(0, 200)}`);
    ms.push(performance.now() - t0);
  }
  return ms.sort((a, b) => a - b)[1]!;
}

export async function measureMemory(ctx: Ctx, notes: string[]): Promise<MemoryFigures> {
  const dir = join(ctx.workDir, 'lean');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  ctx.log('  lean: idle memory (empty node, Rota as npm start runs it, without the flag, from sources)');
  const bareIdle = await attempt(ctx, 'bare node', () => bare(ctx));
  const prod = await attempt(ctx, 'start-up, empty', () => starts(ctx, 'lean-empty', {}, notes));
  const coldCache = await attempt(ctx, 'start-up, no compile cache', () =>
    starts(ctx, 'lean-nocache', { ROTA_COMPILE_CACHE: 'off' }, notes),
  );
  const reexec = await attempt(ctx, 'start-up, re-exec', () =>
    starts(ctx, 'lean-reexec', {}, notes, 'reexec'),
  );
  const noFlag = await attempt(ctx, 'no flag', () => once(ctx, 'lean-noflag', []));
  const sourceMaps = await attempt(ctx, 'source maps', () =>
    once(ctx, 'lean-maps', [...START_FLAGS, '--enable-source-maps']),
  );
  const source = await attempt(ctx, 'sources', () => once(ctx, 'lean-src', [], { script: 'src/main.ts' }));
  const emptyDb = join(dir, 'empty.db');
  const sqliteEmpty = await attempt(ctx, 'empty SQLite', () =>
    once(ctx, 'lean-sqlite-empty', 'own', { env: { ROTA_STORAGE_PATH: emptyDb } }),
  );
  const sqliteFull = await attempt(ctx, `start-up with ${ctx.scaleProxies} proxies`, async () => {
    const db = await populatedDatabase(ctx.workDir, ctx.scaleProxies, ctx.log);
    ctx.log(`  lean: start-up with ${ctx.scaleProxies} proxies in SQLite (${STARTS} times)`);
    return starts(ctx, 'lean-sqlite-full', { ROTA_STORAGE_PATH: db }, notes);
  });
  const wrapper = await attempt(ctx, 'wrapper timing', async () => ({
    withNodeMs: await timed('bash', ['scripts/with-node.sh', 'true']),
    buildCheckMs: await timed(process.execPath, ['scripts/build.ts']),
    bareNodeMs: await timed(process.execPath, ['-e', '0']),
  }));
  return {
    bare: bareIdle,
    prod,
    coldCache,
    reexec,
    noFlag,
    sourceMaps,
    source,
    sqliteEmpty,
    sqliteFull,
    wrapper,
  };
}
