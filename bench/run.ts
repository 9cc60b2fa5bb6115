/**
 * `npm run bench`: every workload of issue 6 against Rota and the references, one at a time, then one
 * table on stdout and in BENCHMARKS.md. `--quick` shortens every run (and the pool-scale pool) for
 * development and writes bench/.work/BENCHMARKS.quick.md instead;
 * `--only=compare,failover,scale,health,floor,forward,bans,shared,lean` runs a subset; `--profile` starts
 * every Rota with --cpu-prof (profiles in bench/.work/profiles). A reference that cannot run is marked in
 * the table; the run goes on. Workloads 8-11 (`forward`, `bans`, `shared`, `lean`) write sections of their
 * own after the targets.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Ctx } from './lib/context.ts';
import { waitForQuiet } from './lib/cpu.ts';
import { startTarget } from './lib/fixtures.ts';
import { describeMachine, loadAverage } from './lib/machine.ts';
import { type RunReport, renderSummary, writeBenchmarks } from './lib/markdown.ts';
import { installCleanup, isInterrupted, run, stopAll } from './lib/proc.ts';
import { ensureProxywhirl, PROXYWHIRL_VERSION } from './lib/proxywhirl.ts';
import { emptyOutput, type WorkloadOutput } from './lib/report.ts';
import { ROOT } from './lib/rota.ts';
import { ensureSquid, type Squid, startSquid } from './lib/squid.ts';
import { WRK } from './lib/wrk.ts';
import { runBans } from './workloads/bans.ts';
import { runCompare } from './workloads/compare.ts';
import { runFailover } from './workloads/failover.ts';
import { runFloor } from './workloads/floor.ts';
import { runForward } from './workloads/forward.ts';
import { runHealth } from './workloads/health.ts';
import { runLean } from './workloads/lean.ts';
import { runScale } from './workloads/scale.ts';
import { runShared } from './workloads/shared.ts';

const WORKLOADS = [
  'compare',
  'failover',
  'scale',
  'health',
  'floor',
  'forward',
  'bans',
  'shared',
  'lean',
] as const;
type WorkloadName = (typeof WORKLOADS)[number];

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

function parseArgs(argv: readonly string[]): { quick: boolean; profile: boolean; only: Set<WorkloadName> } {
  const quick = argv.includes('--quick');
  const profile = argv.includes('--profile');
  const onlyArg = argv.find((a) => a.startsWith('--only='));
  const only = new Set<WorkloadName>();
  for (const w of onlyArg ? onlyArg.slice('--only='.length).split(',') : WORKLOADS) {
    if (!(WORKLOADS as readonly string[]).includes(w)) {
      log(`unknown workload ${JSON.stringify(w)}; expected some of ${WORKLOADS.join(',')}`);
      process.exit(2);
    }
    only.add(w as WorkloadName);
  }
  return { quick, profile, only };
}

function commandLine(quick: boolean, only: ReadonlySet<WorkloadName>): string {
  const args = [
    ...(quick ? ['--quick'] : []),
    ...(only.size < WORKLOADS.length ? [`--only=${[...only].join(',')}`] : []),
  ];
  return args.length > 0 ? `npm run bench -- ${args.join(' ')}` : 'npm run bench';
}

async function ensureWrk(): Promise<void> {
  if (existsSync(WRK)) return;
  if (process.getuid?.() !== 0) throw new Error(`${WRK} is missing: apt-get install wrk`);
  log('installing wrk with apt-get...');
  await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'wrk'], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    timeoutMs: 600_000,
  });
  if (!existsSync(WRK)) throw new Error('apt-get install wrk failed');
}

async function prepare(
  workDir: string,
): Promise<{ squid: Squid | null; squidError: string; pwError: string | null }> {
  await ensureWrk();
  let squid: Squid | null = null;
  let squidError = '';
  try {
    await ensureSquid(log);
    squid = await startSquid(workDir, 10);
  } catch (e) {
    squidError = (e as Error).message;
    log(`squid is unavailable: ${squidError}`);
  }
  let pwError: string | null = null;
  try {
    await ensureProxywhirl(log);
  } catch (e) {
    pwError = (e as Error).message;
    log(`proxywhirl is unavailable: ${pwError}`);
  }
  return { squid, squidError, pwError };
}

/** Each selected workload in turn, each after waiting for a quiet machine; one failing does not stop the rest. */
async function runWorkloads(
  ctx: Ctx,
  only: ReadonlySet<WorkloadName>,
  pwError: string | null,
): Promise<{ outputs: WorkloadOutput[]; background: string[] }> {
  const steps: Record<WorkloadName, () => Promise<WorkloadOutput>> = {
    compare: () => runCompare(ctx, pwError),
    failover: () => runFailover(ctx),
    scale: () => runScale(ctx),
    health: () => runHealth(ctx),
    floor: () => runFloor(ctx),
    forward: () => runForward(ctx),
    bans: () => runBans(ctx),
    shared: () => runShared(ctx),
    // Workload 11 quotes workloads 1-3's peak RSS when they ran before it.
    lean: () => runLean(ctx, outputs),
  };
  const outputs: WorkloadOutput[] = [];
  const background: string[] = [];
  for (const name of WORKLOADS) {
    if (!only.has(name) || isInterrupted()) continue;
    log(`\n== ${name}`);
    const busy = await waitForQuiet(ctx.quick ? 0 : 600, log);
    background.push(`${name} ${(busy * 100).toFixed(0)}%`);
    try {
      outputs.push(await steps[name]());
    } catch (e) {
      log(`${name} failed: ${(e as Error).stack ?? e}`);
      outputs.push({ ...emptyOutput(), notes: [`${name}: the harness failed: ${(e as Error).message}`] });
    }
  }
  return { outputs, background };
}

async function main(): Promise<void> {
  const started = performance.now();
  const { quick, profile, only } = parseArgs(process.argv.slice(2));
  installCleanup(log);
  const workDir = join(ROOT, 'bench', '.work');
  mkdirSync(workDir, { recursive: true });
  rmSync(join(workDir, 'logs'), { recursive: true, force: true });
  const machine = await describeMachine();
  log(`Rota benchmarks${quick ? ' (--quick)' : ''}: ${machine.nproc} cores, load ${machine.loadBefore}`);
  const { squid, squidError, pwError } = await prepare(workDir);
  // Every workload runs Rota as npm start does: the production build, made (when stale) once here.
  const built = await run(process.execPath, [join(ROOT, 'scripts', 'build.ts')], {
    cwd: ROOT,
    timeoutMs: 300_000,
  });
  if (built.code !== 0) throw new Error(`node scripts/build.ts failed: ${built.stderr.slice(0, 500)}`);
  const target = await startTarget();
  const ctx: Ctx = {
    quick,
    workDir,
    target,
    squid,
    squidError,
    loadS: quick ? 4 : 20,
    warmS: quick ? 1 : 3,
    scaleProxies: quick ? 10_000 : 100_000,
    rotaNodeFlags: profile ? ['--cpu-prof', `--cpu-prof-dir=${join(workDir, 'profiles')}`] : [],
    log,
  };
  let done: { outputs: WorkloadOutput[]; background: string[] };
  try {
    done = await runWorkloads(ctx, only, pwError);
  } finally {
    await target.close();
    await stopAll();
  }
  const { outputs, background } = done;
  if (isInterrupted()) return new Promise<void>(() => {}); // the signal handler exits once all is stopped
  const report: RunReport = {
    machine,
    command: commandLine(quick, only),
    quick,
    squidVersion: squid?.version ?? `unavailable (${squidError})`,
    proxywhirl: pwError ? `${PROXYWHIRL_VERSION} (unavailable: ${pwError})` : PROXYWHIRL_VERSION,
    rows: outputs.flatMap((o) => o.rows),
    targets: outputs.flatMap((o) => o.targets),
    notes: [
      `CPU used by other programs just before each workload (the harness waits up to 10 min for < 15%): ${background.join(', ')}.`,
      ...outputs.flatMap((o) => o.notes),
    ],
    sections: outputs.flatMap((o) => o.sections ?? []),
    loadAfter: loadAverage(),
    elapsedS: (performance.now() - started) / 1000,
  };
  process.stdout.write(`\n${renderSummary(report)}\n`);
  const full = !quick && only.size === WORKLOADS.length;
  const out = full ? join(ROOT, 'BENCHMARKS.md') : join(workDir, 'BENCHMARKS.partial.md');
  writeBenchmarks(out, report);
  log(`written to ${out}`);
}

main().then(
  () => process.exit(0),
  async (e: unknown) => {
    log(`bench: ${(e as Error).stack ?? String(e)}`);
    await stopAll();
    process.exit(1);
  },
);
