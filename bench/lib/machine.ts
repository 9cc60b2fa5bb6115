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
    wrk: /^wrk \S+/.exec((w.stdout + w.stderr).trim())?.[0] ?? 'wrk (version unknown)',
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
