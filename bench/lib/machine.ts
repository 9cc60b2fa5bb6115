import { readFileSync } from 'node:fs';
import os from 'node:os';
import { run } from './proc.ts';
import { WRK } from './wrk.ts';

export interface Machine {
  readonly date: string;
  readonly nproc: number;
  readonly memoryGiB: number;
  readonly cpu: string;
  readonly kernel: string;
  readonly node: string;
  readonly wrk: string;
  readonly python: string;
  readonly loadBefore: string;
}

export async function describeMachine(): Promise<Machine> {
  const nproc = await run('nproc', []);
  const w = await run(WRK, ['-v']);
  const py = await run('python3', ['--version']);
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    nproc: Number(nproc.stdout.trim()) || os.availableParallelism(),
    memoryGiB: os.totalmem() / 1024 ** 3,
    cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    wrk: (w.stdout + w.stderr).split('\n')[0]?.trim() || 'wrk (version unknown)',
    python: (py.stdout + py.stderr).trim() || 'unknown',
    loadBefore: loadAverage(),
  };
}

export function loadAverage(): string {
  return os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');
}

function cpuTimes(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  return { busy: total - idle, total };
}

/** Share of the machine's CPU in use over `ms` (by anything: nothing of ours runs while this is called). */
export async function cpuBusy(ms: number): Promise<number> {
  const a = cpuTimes();
  await new Promise((r) => setTimeout(r, ms));
  const b = cpuTimes();
  return b.total > a.total ? (b.busy - a.busy) / (b.total - a.total) : 0;
}

/**
 * Other programs on the machine (a test suite, a compiler) take CPU from whatever is measured. Before
 * each workload, wait up to `maxWaitS` for the machine to be quiet; return what was seen, for the notes.
 */
export async function waitForQuiet(maxWaitS: number, log: (m: string) => void): Promise<number> {
  const deadline = Date.now() + maxWaitS * 1000;
  let busy = await cpuBusy(2000);
  let told = false;
  while (busy > QUIET && Date.now() < deadline) {
    if (!told)
      log(`  the machine is busy (${(busy * 100).toFixed(0)}% CPU used by other programs); waiting...`);
    told = true;
    busy = await cpuBusy(5000);
  }
  return busy;
}

const QUIET = 0.15;
