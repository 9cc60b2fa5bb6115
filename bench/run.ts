/**
 * `npm run bench`: every scenario against Rota and its references, one at a time, then one table on
 * stdout (Rota's figure, the reference measured in the same run, their ratio, the target, met or not)
 * and every raw figure in bench/results/latest.json. BENCHMARKS.md is written by hand from the table.
 *
 *   npm run bench                              # every scenario, 20 s per measured load
 *   npm run bench -- --only=get,connect        # some of: post floor get connect bulk inspect failover startup policies
 *   npm run bench -- --duration=2 --proxies=10000   # short loads, a smaller pool: for development
 *   npm run bench -- --profile                 # every Rota under --cpu-prof (bench/.work/profiles)
 *
 * Everything runs on loopback and is started and stopped here (BENCHMARKS.md, "Method"); Rota's production
 * build is made here when stale. A scenario that fails is reported; the run goes on.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startTarget } from './lib/fixtures.ts';
import { waitForQuiet } from './lib/measure.ts';
import { installCleanup, isInterrupted, must, run, stopAll } from './lib/proc.ts';
import { ensureProxywhirl, PROXYWHIRL_VERSION } from './lib/refs.ts';
import { alone, type Ctx, type Row, renderTable, type Scenario } from './lib/report.ts';
import { ROOT } from './lib/rota.ts';
import { ensureSquid, startSquid } from './lib/squid.ts';
import { ensureWrk, WRK } from './lib/wrk.ts';
import { failover } from './scenarios/failover.ts';
import { floor } from './scenarios/floor.ts';
import { inspect } from './scenarios/inspect.ts';
import { bulk, connect, get } from './scenarios/listener.ts';
import { policies } from './scenarios/policies.ts';
import { post } from './scenarios/post.ts';
import { startup } from './scenarios/startup.ts';

const SCENARIOS: Record<string, Scenario> = {
  post,
  floor,
  get,
  connect,
  bulk,
  inspect,
  failover,
  startup,
  policies,
};
const NAMES = Object.keys(SCENARIOS);

const log = (m: string) => process.stderr.write(`${m}\n`);

function options() {
  const { values: o } = parseArgs({
    options: {
      only: { type: 'string', default: NAMES.join(',') },
      duration: { type: 'string', default: '20' },
      warm: { type: 'string', default: '3' },
      proxies: { type: 'string', default: '100000' },
      profile: { type: 'boolean', default: false },
    },
  });
  const only = o.only.split(',').filter(Boolean);
  const unknown = only.filter((n) => !NAMES.includes(n));
  if (unknown.length > 0) throw new Error(`unknown scenario ${unknown}; expected some of ${NAMES}`);
  const loadS = Number(o.duration);
  const warmS = Math.min(Number(o.warm), loadS);
  return { only, loadS, warmS, patient: loadS >= 10, poolSize: Number(o.proxies), profile: o.profile };
}

/** The machine and the software, for the JSON and BENCHMARKS.md. */
async function machine() {
  const version = async (cmd: string, args: string[]) => {
    const r = await run(cmd, args);
    return (r.stdout + r.stderr).trim().split('\n')[0] ?? '';
  };
  const load = os.loadavg().map((x) => x.toFixed(2));
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    // "-dirty": the build measured has changes not yet committed.
    commit: await version('git', ['-C', ROOT, 'describe', '--always', '--dirty']),
    cores: os.availableParallelism(),
    cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 1024 ** 3),
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    wrk: await version(WRK, ['-v']),
    squid: await version('/usr/sbin/squid', ['-v']),
    proxywhirl: PROXYWHIRL_VERSION,
    loadBefore: load.join(' / '),
  };
}

async function prepare(): Promise<string | null> {
  await ensureWrk(log);
  await ensureSquid(log);
  await must(process.execPath, [join(ROOT, 'scripts', 'build.ts')], { cwd: ROOT, timeoutMs: 300_000 });
  const why = (e: unknown) => (e as Error).message;
  return ensureProxywhirl(log).then(() => null, why);
}

async function main(): Promise<void> {
  const started = performance.now();
  const opts = options();
  installCleanup(log);
  const workDir = join(ROOT, 'bench', '.work');
  rmSync(join(workDir, 'logs'), { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  const proxywhirlError = await prepare();
  if (proxywhirlError) log(`proxywhirl is unavailable: ${proxywhirlError}`);
  const about = await machine();
  const target = await startTarget();
  const squid = await startSquid(workDir, 10);
  const rotaFlags = opts.profile ? ['--cpu-prof', `--cpu-prof-dir=${join(workDir, 'profiles')}`] : [];
  const ctx: Ctx = { ...opts, workDir, target, squid, rotaFlags, proxywhirlError, log };
  const rows: Row[] = [];
  const raw: Record<string, unknown> = {};
  try {
    for (const name of opts.only) {
      if (isInterrupted()) break;
      log(`\n== ${name}`);
      const busy = await waitForQuiet(ctx.patient ? 600 : 0, log);
      try {
        const r = await SCENARIOS[name]!(ctx);
        rows.push(...r.rows);
        raw[name] = { otherProgramsCpuBefore: busy, ...(r.raw as object) };
      } catch (e) {
        log(`${name} failed: ${(e as Error).stack ?? e}`);
        rows.push({ ...alone(name, `failed: ${(e as Error).message.slice(0, 120)}`, null), met: false });
        raw[name] = { error: String(e) };
      }
    }
  } finally {
    await target.close();
    await stopAll();
  }
  if (isInterrupted()) return new Promise<void>(() => {}); // the signal handler exits once all is stopped
  const elapsedS = Math.round((performance.now() - started) / 1000);
  process.stdout.write(`\n${renderTable(rows)}\n`);
  const out = join(ROOT, 'bench', 'results', 'latest.json');
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ ...about, options: opts, elapsedS, rows, raw }, null, 2)}\n`);
  log(`\n${elapsedS} s; raw figures in ${out}`);
}

main().then(
  () => process.exit(0),
  async (e: unknown) => {
    log(`bench: ${(e as Error).stack ?? String(e)}`);
    await stopAll();
    process.exit(1);
  },
);
