import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Ctx } from '../lib/context.ts';
import { type InstallSize, productionInstall } from '../lib/install-size.ts';
import { run } from '../lib/proc.ts';
import { failedCell, type WorkloadOutput } from '../lib/report.ts';
import { ROOT } from '../lib/rota.ts';
import { failedLoad, measureLoad } from './lean-load.ts';
import { measureMemory, type Outcome } from './lean-memory.ts';
import { leanOutput } from './lean-report.ts';

/**
 * Workload 11, a lean core: Rota as `npm start` runs it (the esbuild bundle dist/main.js, young
 * generation capped at 16 MB), measured for the targets — idle RSS and where it goes, RSS per
 * proxy, start-up, peak RSS and CPU per call under the loads of workloads 1-3 and 7, the young
 * generation's trade-off, and the size of a production install.
 */
export interface Build {
  readonly distKb: number;
  readonly rebuilt: boolean;
}

/** `node scripts/build.ts`, as `npm start` runs it first: rebuilds dist/ only when a source is newer. */
async function build(ctx: Ctx): Promise<Outcome<Build>> {
  const r = await run(process.execPath, ['scripts/build.ts'], { cwd: ROOT, timeoutMs: 300_000 });
  if (r.code !== 0) {
    ctx.log(`  lean: node scripts/build.ts failed: ${r.stderr.slice(-500)}`);
    return { ok: false, reason: `node scripts/build.ts failed: ${r.stderr.trim().split('\n').at(-1) ?? ''}` };
  }
  // dist/main.js is the entry; the server and the stores are chunks it imports.
  const chunks = join(ROOT, 'dist', 'chunks');
  const files = [
    join(ROOT, 'dist', 'main.js'),
    ...readdirSync(chunks)
      .filter((n) => n.endsWith('.js'))
      .map((n) => join(chunks, n)),
  ];
  const distKb = files.reduce((kb, f) => kb + statSync(f).size / 1024, 0);
  return { ok: true, value: { distKb, rebuilt: r.stderr.includes('build: dist/main.js') } };
}

async function install(ctx: Ctx): Promise<Outcome<InstallSize>> {
  try {
    return { ok: true, value: await productionInstall(ctx.log) };
  } catch (e) {
    ctx.log(`  lean: production install failed: ${(e as Error).stack ?? e}`);
    return { ok: false, reason: failedCell(e).failed };
  }
}

/** `earlier`: what the run's other workloads reported (workloads 1-3's peak RSS, when they ran). */
export async function runLean(ctx: Ctx, earlier: readonly WorkloadOutput[] = []): Promise<WorkloadOutput> {
  const notes: string[] = [];
  ctx.log('  lean: node scripts/build.ts (as npm start does)');
  const built = await build(ctx);
  if (!built.ok) {
    const failed = { ok: false as const, reason: built.reason };
    const memory = {
      bare: failed,
      prod: failed,
      coldCache: failed,
      reexec: failed,
      noFlag: failed,
      sourceMaps: failed,
      source: failed,
      sqliteEmpty: failed,
      sqliteFull: failed,
      wrapper: failed,
    };
    const load = failedLoad(built.reason);
    return leanOutput(ctx, { build: built, memory, load, install: failed, earlier }, notes);
  }
  const memory = await measureMemory(ctx, notes);
  const load = await measureLoad(ctx, notes);
  const size = await install(ctx);
  return leanOutput(ctx, { build: built, memory, load, install: size, earlier }, notes);
}
