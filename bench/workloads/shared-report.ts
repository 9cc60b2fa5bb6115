import type { Ctx } from '../lib/context.ts';
import {
  type Cell,
  check,
  fmt,
  isNum,
  median,
  type TargetCheck,
  type WorkloadOutput,
} from '../lib/report.ts';
import { mdTable, section, show } from '../lib/section.ts';
import { failures, type WrkResult } from '../lib/wrk.ts';
import { SHAPES } from './shared-cluster.ts';
import type { Propagation } from './shared-propagation.ts';

export type Outcome<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly reason: string };

export interface ShapeFigures {
  readonly w: WrkResult;
  /** Peak RSS of each Rota process (instances and workers), MB. */
  readonly peaksMb: readonly number[];
  /** CPU per call during the measured run, µs: every Rota process together, and the redis-server. */
  readonly cpuUs: { readonly rota: number; readonly redis: number | null };
}

const W = 'Workload 10: several Rota instances as one (shared state)';

const goodput = (w: WrkResult) => (w.requests - w.errors.status) / w.durationS;

/** Nearest-rank percentile; Infinity stays (a change not seen within the bound). */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

function shapeRows(results: ReadonlyMap<string, Outcome<ShapeFigures>>): string[][] {
  return SHAPES.map((s) => {
    const o = results.get(s.key) ?? { ok: false, reason: 'not run' };
    if (!o.ok) return [s.title, String(s.instances * s.workers), ...Array(9).fill(`failed: ${o.reason}`)];
    const { w, peaksMb, cpuUs } = o.value;
    const rps = goodput(w);
    return [
      s.title,
      String(peaksMb.length),
      fmt(rps, 0),
      fmt(rps / s.instances, 0),
      fmt(w.p50Ms, 2),
      fmt(w.p99Ms, 2),
      fmt(failures(w), 0),
      fmt(cpuUs.rota, 0),
      cpuUs.redis === null ? '—' : fmt(cpuUs.redis, 0),
      fmt(Math.max(...peaksMb), 1),
      fmt(
        peaksMb.reduce((a, b) => a + b, 0),
        1,
      ),
    ];
  });
}

function propagationTable(p: Outcome<Propagation>): string {
  const head = ['Change (made on instance 1, polled on 2 and 3)', 'observations', 'p50, ms', 'p99, ms'];
  head.push('max, ms', 'not seen within 5 s');
  if (!p.ok) return mdTable(head, [['all', `failed: ${p.reason}`, '', '', '', '']]);
  const row = (name: string, xs: readonly number[]) => [
    name,
    String(xs.length),
    fmt(percentile(xs, 50), 1),
    Number.isFinite(percentile(xs, 99)) ? fmt(percentile(xs, 99), 1) : '≥ 5,000',
    Number.isFinite(Math.max(...xs)) ? fmt(Math.max(...xs), 1) : '≥ 5,000',
    String(xs.filter((x) => !Number.isFinite(x)).length),
  ];
  const v = p.value;
  return mdTable(head, [
    row('PUT config rotation_strategy → GET config', v.config),
    row('POST proxies → GET proxies/{id} 200', v.proxy),
    row('both kinds', [...v.config, ...v.proxy]),
    [
      'the write itself on instance 1 (included above)',
      String(v.writeMs.length),
      fmt(percentile(v.writeMs, 50), 1),
      fmt(percentile(v.writeMs, 99), 1),
      fmt(Math.max(...v.writeMs), 1),
      '',
    ],
  ]);
}

function rpsOf(results: ReadonlyMap<string, Outcome<ShapeFigures>>, key: string): Cell {
  const o = results.get(key);
  if (!o) return { failed: 'not run' };
  return o.ok ? goodput(o.value.w) : { failed: o.reason };
}

const MEMORY_RUNS = ['memory-1', 'memory-2', 'memory-3'];
const SHARED_RUNS = ['shared-1x1', 'shared-1x1-2', 'shared-1x1-3'];

function medianCell(results: ReadonlyMap<string, Outcome<ShapeFigures>>, keys: readonly string[]): Cell {
  const xs = keys.map((k) => rpsOf(results, k)).filter(isNum);
  return xs.length > 0 ? median(xs) : { failed: `no run of ${keys.join(', ')}` };
}

function targets(
  results: ReadonlyMap<string, Outcome<ShapeFigures>>,
  p: Outcome<Propagation>,
): TargetCheck[] {
  const memory = medianCell(results, MEMORY_RUNS);
  const shared = medianCell(results, SHARED_RUNS);
  const loss: Cell = isNum(shared) && isNum(memory) ? 1 - shared / memory : isNum(shared) ? memory : shared;
  const all: Cell = p.ok ? percentile([...p.value.config, ...p.value.proxy], 99) : { failed: p.reason };
  return [
    check(
      '10. Shared state (SQLite + Redis) costs ≤ 15% req/s against memory state, one instance, same load',
      loss,
      (v) => v <= 0.15,
      (v) =>
        `${show(shared, 0)} vs ${show(memory, 0)} req/s (medians of 3 alternating runs each): ${(-v * 100).toFixed(1)}%`,
    ),
    check(
      '10. A change on one instance seen on the others, p99 < 1 s under load',
      all,
      (v) => v < 1000,
      (v) => (Number.isFinite(v) ? `${v.toFixed(1)} ms` : 'not seen within 5 s'),
    ),
  ];
}

function intro(ctx: Ctx): string[] {
  return [
    'Command: `npm run bench -- --only=shared` (part of `npm run bench`). wrk (1 thread, 50 connections,',
    `bench/wrk/bench.lua) sends \`POST /api/v1/request\` (a GET of the 48-byte /json through the pool) to`,
    "nginx (bench/lib/cluster-kit.ts: deploy/nginx.conf's shape, one worker process, round-robin, keepalive",
    `64), which spreads the calls over the Rota instances; ${ctx.loadS} s measured after a ${ctx.warmS} s warm-up,`,
    'every shape started afresh (a new redis-server with no persistence, a new copy of one SQLite file',
    'holding the 10 squid ports as the pool, new Rota processes started like in the other workloads with',
    '`ROTA_STORAGE_PATH` and `ROTA_REDIS_URL` and, for workers, `ROTA_WORKERS=2`; listeners off). The',
    'yardstick is one instance with memory state at the same load, behind the same nginx, run three times',
    'alternating with three runs of the one-instance shared shape (the target compares the medians: two runs',
    'of one shape differ by 10-20% here); a SQLite-only instance splits the cost between the store and Redis.',
    "CPU per call is each process's user + system time over the measured run divided by the calls. Peak RSS is",
    "each Rota process's high-water mark (a ROTA_WORKERS primary and its workers are separate processes).",
    'On this 2-core machine wrk, nginx, squid, Redis, the target and every Rota share the same cores, so',
    'more instances cannot add throughput here; the rows show what the machine allows, not a scaling curve.',
    '',
    'Propagation: a fresh 3-instance shape under the same load (wrk for 30 s); 50 times, a `PUT config`',
    'switching `rotation_strategy` on instance 1 then `GET config` polled on instances 2 and 3 (every ~1 ms)',
    'until it shows; and 50 times a `POST proxies` on instance 1 then `GET proxies/{id}` polled until 200.',
    'Times run from just before the write was sent, so they include the write itself.',
  ];
}

/**
 * The shared state's cost in CPU per call, which the 2 shared cores do not blur as they blur req/s (the
 * two memory runs, identical shapes, have differed by over 10% in req/s).
 */
function cpuNote(results: ReadonlyMap<string, Outcome<ShapeFigures>>): string[] {
  const cpu = (k: string) => {
    const o = results.get(k);
    return o?.ok ? o.value.cpuUs : null;
  };
  const rota = (keys: readonly string[]) =>
    keys
      .map(cpu)
      .filter((c) => c !== null && isNum(c.rota))
      .map((c) => c!.rota);
  const redisOf = SHARED_RUNS.map(cpu)
    .filter((c) => c?.redis != null)
    .map((c) => c!.redis!);
  const mem = rota(MEMORY_RUNS);
  const shr = rota(SHARED_RUNS);
  const sqlite = cpu('sqlite');
  if (mem.length === 0 || shr.length === 0) return [];
  const base = median(mem);
  const own = median(shr);
  const redis = redisOf.length > 0 ? median(redisOf) : 0;
  const total = own + redis;
  return [
    `10. CPU per call, one instance (medians of 3 runs): memory state ${fmt(base, 0)} µs of Rota ` +
      `(each: ${mem.map((x) => fmt(x, 0)).join(', ')})` +
      (sqlite && isNum(sqlite.rota) ? `, SQLite alone ${fmt(sqlite.rota, 0)} µs (one run)` : '') +
      `, SQLite + Redis ${fmt(own, 0)} µs of Rota (each: ${shr.map((x) => fmt(x, 0)).join(', ')}) and ` +
      `${fmt(redis, 0)} µs of redis-server: ` +
      `${fmt((100 * (total - base)) / base, 1)}% more CPU per call for the shared state, both processes counted.`,
  ];
}

export function sharedOutput(
  ctx: Ctx,
  results: ReadonlyMap<string, Outcome<ShapeFigures>>,
  p: Outcome<Propagation>,
  notes: string[],
): WorkloadOutput {
  const t = targets(results, p);
  const head = ['Shape', 'Rota processes', 'req/s', 'req/s per instance', 'p50, ms', 'p99, ms'];
  head.push('failed calls', 'Rota CPU per call, µs', 'Redis CPU per call, µs');
  head.push('peak RSS, largest process, MB', 'peak RSS, all processes, MB');
  const blocks = [
    {
      title: '10.1 Throughput through nginx, small JSON, 50 connections',
      table: mdTable(head, shapeRows(results)),
    },
    { title: '10.2 Propagation between instances under load', table: propagationTable(p) },
  ];
  const more: string[] = [...cpuNote(results)];
  for (const s of SHAPES) {
    const o = results.get(s.key);
    if (s.workers === 1 || !o?.ok) continue;
    const each = o.value.peaksMb.map((m) => fmt(m, 1)).join(', ');
    more.push(`10. ${s.title}: peak RSS of each process, each primary before its workers: ${each} MB.`);
  }
  if (p.ok) {
    const l = p.value.load;
    more.push(
      `10. Propagation: ${p.value.changesMade} changes of each kind made during the load; the load meanwhile: ` +
        `${fmt(goodput(l), 0)} req/s, p99 ${fmt(l.p99Ms, 1)} ms, ${failures(l)} failed calls.`,
    );
  }
  return { rows: [], targets: t, notes: [...notes, ...more], sections: [section(W, intro(ctx), blocks, t)] };
}
