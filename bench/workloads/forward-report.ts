import type { Ctx } from '../lib/context.ts';
import type { CpuSplit } from '../lib/cpu.ts';
import type { ForwardName, Subjects } from '../lib/forward-gateways.ts';
import {
  type Cell,
  check,
  fmt,
  type TargetCheck,
  targetsTable,
  type WorkloadOutput,
  withContext,
} from '../lib/report.ts';
import {
  type BulkResult,
  failureCount,
  failuresText,
  type IdleResult,
  type RateResult,
} from '../lib/tunnels.ts';
import { failures, type WrkResult } from '../lib/wrk.ts';
import { goodput } from './compare-rows.ts';
import {
  cells,
  cpuText,
  type FRow,
  type Results,
  ratio,
  reference,
  references,
  table,
} from './forward-table.ts';
import { forwardIntro, forwardNotes } from './forward-text.ts';

export type { Outcome } from './forward-table.ts';

export type CpuFigures = ReturnType<CpuSplit['stop']>;

export interface ForwardResults {
  readonly get50: Results<{ wrk: WrkResult; cpu: CpuFigures }>;
  readonly get1: Results<{ wrk: WrkResult; cpu: CpuFigures }>;
  readonly rate: Results<{ rate: RateResult; cpu: CpuFigures }>;
  readonly bulk: Results<BulkResult>;
  readonly idle: Results<IdleResult>;
  /** The subjects of the load phases and of the idle phase, for the notes (probes, logs, limits). */
  readonly subjects: readonly Subjects[];
}

/** The three proxies in front of squid (direct has no proxy of its own: squid is it). */
const GATEWAYS: ForwardName[] = ['rota', 'proxyChain', 'relay'];

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;
const times = (v: number) => `${v.toFixed(2)}×`;

/**
 * A target on Rota's figure over `base`'s (direct or proxy-chain), with the forward relay's own ratio to
 * the same base beside it, and `more` (other references' figures) after that.
 */
function ratioTarget(
  target: string,
  c: Partial<Record<ForwardName, Cell>>,
  base: { name: ForwardName; label: string },
  o: { pass: (v: number) => boolean; show: (v: number) => string; more?: ReadonlyArray<string | null> },
): TargetCheck {
  return withContext(
    check(target, ratio(c.rota, c[base.name], base.label), o.pass, o.show),
    references([
      reference('the forward relay', ratio(c.relay, c[base.name], base.label), o.show),
      ...(o.more ?? []),
    ]),
  );
}

const CHAIN = { name: 'proxyChain', label: 'proxy-chain' } as const;
const DIRECT = { name: 'direct', label: 'direct' } as const;

function getRows(r: ForwardResults): { rows: FRow[]; targets: TargetCheck[] } {
  const g = r.get50;
  const cpu = (k: string) =>
    cells(g, (v) => v.cpu.perCallUs[k] ?? null, k === 'proxy' ? GATEWAYS : undefined);
  const proxyCpu = cpu('proxy');
  const rows: FRow[] = [
    { metric: 'successful req/s', decimals: 0, cells: cells(g, (v) => goodput(v.wrk)), ratio: true },
    { metric: 'p50 latency, ms', decimals: 2, cells: cells(g, (v) => v.wrk.p50Ms), ratio: true },
    { metric: 'p99 latency, ms', decimals: 2, cells: cells(g, (v) => v.wrk.p99Ms), ratio: true },
    {
      metric: 'failed requests (status ≥ 400, socket errors, timeouts)',
      decimals: 0,
      cells: cells(g, (v) => failures(v.wrk)),
    },
    { metric: 'CPU per call: the proxy, µs', decimals: 0, cells: proxyCpu },
    { metric: 'CPU per call: squid, µs', decimals: 0, cells: cpu('squid') },
    { metric: 'CPU per call: target (harness), µs', decimals: 0, cells: cpu('target') },
    { metric: 'machine idle, %', decimals: 0, cells: cells(g, (v) => v.cpu.idlePct) },
  ];
  const rps = rows[0]!.cells;
  const targets = [
    ratioTarget('8.1 GET: Rota ≥ 1.2× proxy-chain', rps, CHAIN, {
      pass: (v) => v >= 1.2,
      show: times,
      more: [cpuText('GET', proxyCpu)],
    }),
    ratioTarget('8.1 GET: Rota ≥ 50% of direct', rps, DIRECT, { pass: (v) => v >= 0.5, show: pct }),
    check(
      '8.1 GET: Rota within 15% of the reference relay',
      ratio(rps.rota, rps.relay, 'relay'),
      (v) => v >= 0.85,
      pct,
    ),
  ];
  return { rows, targets };
}

function latencyRows(r: ForwardResults): { rows: FRow[]; targets: TargetCheck[] } {
  const g = r.get1;
  const direct = g.get('direct');
  const base = direct?.ok ? direct.value.wrk.p50Ms : null;
  const added = cells(g, (v) => (base === null ? null : v.wrk.p50Ms - base), ['rota', 'proxyChain', 'relay']);
  const rows: FRow[] = [
    { metric: 'p50 latency, ms', decimals: 3, cells: cells(g, (v) => v.wrk.p50Ms), ratio: true },
    { metric: 'p99 latency, ms', decimals: 3, cells: cells(g, (v) => v.wrk.p99Ms), ratio: true },
    { metric: 'added p50 vs direct, ms', decimals: 3, cells: added },
    { metric: 'successful req/s', decimals: 0, cells: cells(g, (v) => goodput(v.wrk)), ratio: true },
    { metric: 'failed requests', decimals: 0, cells: cells(g, (v) => failures(v.wrk)) },
  ];
  const ms = (v: number) => `${v.toFixed(3)} ms`;
  const t = withContext(
    check('8.4 Added p50 at 1 connection ≤ 0.2 ms', added.rota, (v) => v <= 0.2, ms),
    references([
      reference('the forward relay', added.relay, ms),
      reference('proxy-chain', added.proxyChain, ms),
    ]),
  );
  return { rows, targets: [t] };
}

function rateRows(r: ForwardResults): { rows: FRow[]; targets: TargetCheck[] } {
  const m = r.rate;
  const cpu = (k: string) =>
    cells(m, (v) => v.cpu.perCallUs[k] ?? null, k === 'proxy' ? GATEWAYS : undefined);
  const proxyCpu = cpu('proxy');
  const rows: FRow[] = [
    {
      metric: 'tunnels per second (each: CONNECT, one GET, close)',
      decimals: 0,
      cells: cells(m, (v) => v.rate.perS),
      ratio: true,
    },
    {
      metric: 'p50 per tunnel (connect to last byte), ms',
      decimals: 2,
      cells: cells(m, (v) => v.rate.p50Ms),
      ratio: true,
    },
    { metric: 'p99 per tunnel, ms', decimals: 2, cells: cells(m, (v) => v.rate.p99Ms), ratio: true },
    { metric: 'failed tunnels', decimals: 0, cells: cells(m, (v) => failureCount(v.rate.failed)) },
    {
      metric: 'CONNECT answers with X-Rota-Proxy-Id, %',
      decimals: 1,
      cells: cells(m, (v) => (100 * v.rate.withProxyId) / Math.max(1, v.rate.tunnels), ['rota']),
    },
    { metric: 'CPU per tunnel: the proxy, µs', decimals: 0, cells: proxyCpu },
    { metric: 'CPU per tunnel: squid, µs', decimals: 0, cells: cpu('squid') },
    { metric: 'CPU per tunnel: target (harness), µs', decimals: 0, cells: cpu('target') },
    { metric: 'CPU per tunnel: load generator, µs', decimals: 0, cells: cells(m, (v) => v.rate.loadgenUs) },
    { metric: 'machine idle, %', decimals: 0, cells: cells(m, (v) => v.cpu.idlePct) },
  ];
  const c = rows[0]!.cells;
  const t = ratioTarget('8.2 CONNECT tunnels/s: Rota ≥ 1.2× proxy-chain', c, CHAIN, {
    pass: (v) => v >= 1.2,
    show: times,
    more: [cpuText('tunnel', proxyCpu)],
  });
  return { rows, targets: [t] };
}

function bulkRows(r: ForwardResults): { rows: FRow[]; targets: TargetCheck[] } {
  const m = r.bulk;
  const rows: FRow[] = [
    {
      metric: 'MiB/s received through one tunnel',
      decimals: 1,
      cells: cells(m, (v) => v.mibps),
      ratio: true,
    },
    { metric: '64 MiB downloads completed', decimals: 0, cells: cells(m, (v) => v.downloads) },
    { metric: 'failed downloads', decimals: 0, cells: cells(m, (v) => failureCount(v.failed)) },
  ];
  const c = rows[0]!.cells;
  const t = ratioTarget('8.3 Bulk through one tunnel: Rota ≥ 90% of direct', c, DIRECT, {
    pass: (v) => v >= 0.9,
    show: pct,
    more: [reference('proxy-chain', ratio(c.proxyChain, c.direct, 'direct'), pct)],
  });
  return { rows, targets: [t] };
}

function idleRows(r: ForwardResults, count: number): { rows: FRow[]; targets: TargetCheck[] } {
  const m = r.idle;
  const rows: FRow[] = [
    { metric: `tunnels answered 2xx (of ${fmt(count, 0)})`, decimals: 0, cells: cells(m, (v) => v.answered) },
    { metric: 'answered with X-Rota-Proxy-Id', decimals: 0, cells: cells(m, (v) => v.withProxyId, ['rota']) },
    {
      metric: 'time to open them all (100 at a time), s',
      decimals: 2,
      cells: cells(m, (v) => v.openMs / 1000),
    },
    { metric: 'still carrying a GET after the hold', decimals: 0, cells: cells(m, (v) => v.usable) },
    { metric: 'failures', decimals: 0, cells: cells(m, (v) => failureCount(v.failed)) },
    { metric: 'RSS before, MB', decimals: 1, cells: cells(m, (v) => v.rssBeforeMb) },
    {
      metric: 'RSS added with all open, MB',
      decimals: 1,
      cells: cells(m, (v) => diff(v.rssOpenMb, v.rssBeforeMb)),
      ratio: true,
    },
    {
      metric: 'peak RSS added (100 ms samples), MB',
      decimals: 1,
      cells: cells(m, (v) => diff(v.rssPeakMb, v.rssBeforeMb)),
      ratio: true,
    },
    { metric: 'descriptors before', decimals: 0, cells: cells(m, (v) => v.fdBefore) },
    { metric: 'descriptors with all open', decimals: 0, cells: cells(m, (v) => v.fdOpen) },
    { metric: 'descriptors after closing them', decimals: 0, cells: cells(m, (v) => v.fdAfter) },
    {
      metric: 'descriptors not released after 15 s',
      decimals: 0,
      cells: cells(m, (v) => Math.max(0, diff(v.fdAfter, v.fdBefore) ?? 0)),
    },
    {
      metric: 'time until every descriptor was released, ms',
      decimals: 0,
      cells: cells(m, (v) => v.fdReleaseMs),
    },
  ];
  return { rows, targets: idleTargets(m, count) };
}

const diff = (a: number | null, b: number | null) => (a === null || b === null ? null : a - b);

function idleTargets(m: Results<IdleResult>, count: number): TargetCheck[] {
  const rota = m.get('rota');
  const v = rota?.ok ? rota.value : null;
  const why: Cell = { failed: rota && !rota.ok ? rota.reason : 'no figure' };
  const n0 = (n: number) => fmt(n, 0);
  const added = v ? (diff(v.rssOpenMb, v.rssBeforeMb) ?? why) : why;
  const leaked = v ? (diff(v.fdAfter, v.fdBefore) ?? why) : why;
  const failedText = v ? failuresText(v.failed) : '';
  return [
    check(
      `8.5 ${n0(count)} idle tunnels: all answered`,
      v ? v.answered : why,
      (n) => n === count && failedText === 'none',
      (n) => `${n0(n)} answered; failures: ${failedText}`,
    ),
    check(
      `8.5 RSS added with ${n0(count)} tunnels open < 150 MB`,
      added,
      (n) => n < 150,
      (n) => `${n.toFixed(1)} MB`,
    ),
    check(
      '8.5 every descriptor released after closing them',
      leaked,
      (n) => n <= 0,
      (n) => `${v?.fdBefore} before, ${v?.fdAfter} after: ${n > 0 ? `${n} not released` : 'all released'}`,
    ),
  ];
}

/** Workload 8's section of BENCHMARKS.md (its own tables: four subjects, not the main table's three). */
export function forwardOutput(ctx: Ctx, r: ForwardResults, notes: string[], count: number): WorkloadOutput {
  const parts = [
    { title: '8.1 Absolute-URI GET, small JSON, 50 connections', ...getRows(r) },
    { title: '8.2 New CONNECT tunnels per second, one GET each, 50 loops', ...rateRows(r) },
    { title: '8.3 Bulk download through one CONNECT tunnel', ...bulkRows(r) },
    { title: '8.4 Added latency: absolute-URI GET at 1 connection', ...latencyRows(r) },
    { title: `8.5 ${fmt(count, 0)} idle CONNECT tunnels held open at once`, ...idleRows(r, count) },
  ];
  const section = [
    '## Workload 8: forward-proxy listeners',
    '',
    ...forwardIntro(ctx),
    '',
    ...parts.flatMap((p) => [`### ${p.title}`, '', table(p.rows), '', targetsTable(p.targets), '']),
  ].join('\n');
  return {
    rows: [],
    targets: parts.flatMap((p) => p.targets),
    notes: [...notes, ...forwardNotes(r)],
    sections: [section],
  };
}
