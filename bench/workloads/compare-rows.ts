import { foreignNote } from '../lib/cpu.ts';
import { type Cell, fmt, type Row } from '../lib/report.ts';
import { failures, type WrkResult } from '../lib/wrk.ts';

export type PhaseKey = 'throughput' | 'latency' | 'big';
export type SubjectName = 'direct' | 'proxywhirl' | 'rota';

export type Measured =
  | {
      readonly ok: true;
      readonly wrk: WrkResult;
      readonly peakRssMb: number | null;
      /** RSS just before the measured run (after the warm-up). */
      readonly baseRssMb: number | null;
    }
  | { readonly ok: false; readonly reason: string };

type Get = (phase: PhaseKey, subject: SubjectName) => Measured;

export const PHASE_TITLES: Record<PhaseKey, string> = {
  throughput: '1. Throughput',
  latency: '2. Latency',
  big: '3. Large bodies',
};

/**
 * Two runs of the same subject as one: counts and time add up (so rates are pooled rates); percentiles,
 * which cannot be pooled exactly, are averaged.
 */
export function pooled(a: WrkResult, b: WrkResult): WrkResult {
  const requests = a.requests + b.requests;
  const durationS = a.durationS + b.durationS;
  const bytes = a.bytes + b.bytes;
  const mean = (x: number, y: number) => (x + y) / 2;
  return {
    requests,
    durationS,
    bytes,
    rps: requests / durationS,
    mibps: bytes / durationS / (1024 * 1024),
    p50Ms: mean(a.p50Ms, b.p50Ms),
    p90Ms: mean(a.p90Ms, b.p90Ms),
    p99Ms: mean(a.p99Ms, b.p99Ms),
    maxMs: Math.max(a.maxMs, b.maxMs),
    foreignCpu: Math.max(a.foreignCpu, b.foreignCpu),
    errors: {
      connect: a.errors.connect + b.errors.connect,
      read: a.errors.read + b.errors.read,
      write: a.errors.write + b.errors.write,
      status: a.errors.status + b.errors.status,
      timeout: a.errors.timeout + b.errors.timeout,
    },
  };
}

const SUBJECTS: readonly SubjectName[] = ['direct', 'proxywhirl', 'rota'];

/** Answers per second that were 2xx/3xx: a gateway answering 502s fast must not look fast. */
export function goodput(w: WrkResult): number {
  return (w.requests - w.errors.status) / w.durationS;
}

function row(
  get: Get,
  phase: PhaseKey,
  workload: string,
  metric: string,
  decimals: number,
  pick: (w: WrkResult, m: Extract<Measured, { ok: true }>) => number | null,
  ratio = true,
): Row {
  const cells: Partial<Record<SubjectName, Cell>> = {};
  for (const s of SUBJECTS) {
    const m = get(phase, s);
    if (!m.ok) {
      cells[s] = { failed: m.reason };
      continue;
    }
    if (m.wrk.requests === 0) {
      cells[s] = { failed: `no answer within ${m.wrk.durationS.toFixed(0)} s` };
      continue;
    }
    const v = pick(m.wrk, m);
    if (v !== null) cells[s] = v;
  }
  return { workload, metric, decimals, ratio, ...cells };
}

/** Gateway minus direct path, for the same percentile. */
function added(get: Get, workload: string, metric: string, pct: 'p50Ms' | 'p99Ms'): Row {
  const direct = get('latency', 'direct');
  const cells: Partial<Record<SubjectName, Cell>> = {};
  for (const s of ['proxywhirl', 'rota'] as const) {
    const m = get('latency', s);
    if (!m.ok) cells[s] = { failed: m.reason };
    else if (!direct.ok) cells[s] = { failed: `direct path: ${direct.reason}` };
    else if (m.wrk.requests === 0 || direct.wrk.requests === 0) cells[s] = { failed: 'no answer' };
    else cells[s] = m.wrk[pct] - direct.wrk[pct];
  }
  return { workload, metric, decimals: 3, ...cells };
}

function errorNotes(get: Get): string[] {
  const notes: string[] = [];
  const names: Record<PhaseKey, string> = {
    throughput: '1. Throughput',
    latency: '2. Latency',
    big: '3. Large',
  };
  for (const phase of ['throughput', 'latency', 'big'] as const) {
    for (const s of SUBJECTS) {
      const m = get(phase, s);
      if (!m.ok) continue;
      notes.push(...foreignNote(`${names[phase]}, ${s}`, m.wrk.foreignCpu));
      if (failures(m.wrk) === 0) continue;
      const e = m.wrk.errors;
      notes.push(
        `${names[phase]}, ${s}: ${failures(m.wrk)} failed of ${fmt(m.wrk.requests, 0)} answers ` +
          `(status ≥ 400: ${e.status}, timeouts: ${e.timeout}, connect: ${e.connect}, read: ${e.read}, ` +
          `write: ${e.write}); req/s above counts only successful answers.`,
      );
    }
  }
  return notes;
}

export function comparisonRows(get: Get): { rows: Row[]; notes: string[] } {
  const t = '1. Throughput (small JSON, 50 conns)';
  const l = '2. Added latency (small JSON, 1 conn)';
  const b = '3. Large bodies (1 MiB, 10 conns)';
  const rss = (_w: WrkResult, m: Extract<Measured, { ok: true }>) => m.peakRssMb;
  const base = (_w: WrkResult, m: Extract<Measured, { ok: true }>) => m.baseRssMb;
  const rows: Row[] = [
    row(get, 'throughput', t, 'successful req/s', 0, goodput),
    row(get, 'throughput', t, 'p50 latency, ms', 2, (w) => w.p50Ms),
    row(get, 'throughput', t, 'p99 latency, ms', 2, (w) => w.p99Ms),
    row(get, 'throughput', t, 'RSS before the run, MB', 1, base),
    row(get, 'throughput', t, 'peak RSS, MB', 1, rss),
    row(get, 'latency', l, 'p50 latency, ms', 3, (w) => w.p50Ms),
    row(get, 'latency', l, 'p99 latency, ms', 3, (w) => w.p99Ms),
    added(get, l, 'added p50 vs direct, ms', 'p50Ms'),
    added(get, l, 'added p99 vs direct, ms', 'p99Ms'),
    row(get, 'latency', l, 'peak RSS, MB', 1, rss),
    row(get, 'big', b, 'MiB/s received', 1, (w) => w.mibps),
    row(get, 'big', b, 'successful req/s', 1, goodput),
    row(get, 'big', b, 'p99 latency, ms', 1, (w) => w.p99Ms),
    row(get, 'big', b, 'peak RSS, MB', 1, rss),
  ];
  return { rows, notes: errorNotes(get) };
}
