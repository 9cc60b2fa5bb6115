import type { Ctx } from '../lib/context.ts';
import { type Cell, check, fmt, isNum, median, type TargetCheck, withContext } from '../lib/report.ts';
import { show } from '../lib/section.ts';
import type { GatewayRun, LoadFigures } from './lean-load.ts';
import type { Idle, Outcome } from './lean-memory.ts';
import type { LeanResults } from './lean-report.ts';

/** Workload 11's targets (from the issue) and the breakdown written under the idle-memory table. */

export const get = <T>(o: Outcome<T>, f: (v: T) => number): Cell =>
  o.ok ? f(o.value) : { failed: o.reason };
export const goodput = (r: GatewayRun) => (r.w.requests - r.w.errors.status) / r.w.durationS;

export function directRps(l: LoadFigures): Cell {
  const runs = [l.directBefore, l.directAfter].filter((o) => o.ok).map((o) => (o.ok ? goodput(o.value) : 0));
  return runs.length > 0 ? runs.reduce((a, b) => a + b, 0) / runs.length : { failed: 'no direct run' };
}

function idle(o: { ok: true; value: Idle } | { ok: false; reason: string }): Idle | null {
  return o.ok ? o.value : null;
}

/** KB of RSS (and of V8 heap used) per proxy: the loaded pool's idle figures minus an empty SQLite file's. */
export function perProxyKb(ctx: Ctx, r: LeanResults): { rss: Cell; heap: Cell } {
  const full = r.memory.sqliteFull.ok ? r.memory.sqliteFull.value.idle : null;
  const empty = idle(r.memory.sqliteEmpty);
  if (!full || !empty) return { rss: { failed: 'a start failed' }, heap: { failed: 'a start failed' } };
  const kb = (mb: number) => (mb * 1024) / ctx.scaleProxies;
  const heap =
    full.heap && empty.heap ? kb(full.heap.usedMb - empty.heap.usedMb) : { failed: 'no heap figures' };
  return { rss: kb(full.resident.rssMb - empty.resident.rssMb), heap };
}

function peakUnderLoad(r: LeanResults): Cell {
  const runs = (['semi16', 'w2', 'w3'] as const).map((v) => r.load.rota.get(v));
  let worst = 0;
  for (const o of runs) {
    if (!o) return { failed: 'not run' };
    if (!o.ok) return { failed: o.reason };
    worst = Math.max(worst, o.value.peakMb);
  }
  return worst;
}

/** A gateway's CPU per call under load 1 over the bare relay's (Rota's as `npm start` runs it by default). */
function cpuRatio(r: LeanResults, of?: Outcome<GatewayRun>): Cell {
  const gateway = of ?? r.load.rota.get('semi16');
  const relay = r.load.relay;
  if (!gateway?.ok) return { failed: gateway ? gateway.reason : 'not run' };
  if (!relay.ok) return { failed: relay.reason };
  const a = gateway.value.cpu.perCallUs.gateway;
  const b = relay.value.cpu.perCallUs.gateway;
  return a == null || b == null || b === 0 ? { failed: 'no CPU figures' } : a / b;
}

/** A reference run's figure for a target, for the Measured cell; null when it did not run. */
function floor(name: string, v: Cell, show: (x: number) => string): string | null {
  return isNum(v) ? `${name}: ${show(v)}` : null;
}

function shareOfDirect(r: LeanResults, of?: Outcome<GatewayRun>): Cell {
  const gateway = of ?? r.load.rota.get('semi16');
  const d = directRps(r.load);
  if (!gateway?.ok) return { failed: gateway ? gateway.reason : 'not run' };
  return isNum(d) ? goodput(gateway.value) / d : d;
}

const peaks = (r: LeanResults) =>
  (['semi16', 'w2', 'w3'] as const)
    .map((v, i) => {
      const o = r.load.rota.get(v);
      return `load ${i + 1} ${o?.ok ? `${fmt(o.value.peakMb, 1)} MB` : 'n/a'}`;
    })
    .join(', ');

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;

export function leanTargets(ctx: Ctx, r: LeanResults): TargetCheck[] {
  const m = r.memory;
  const at = ctx.scaleProxies === 100_000 ? '100,000' : `${fmt(ctx.scaleProxies, 0)} (--quick)`;
  const mb = (v: number) => `${v.toFixed(1)} MB`;
  const s = (v: number) => `${(v / 1000).toFixed(2)} s (median of 5)`;
  const gw = (o: ReturnType<LeanResults['load']['rota']['get']>) =>
    o?.ok ? show(o.value.cpu.perCallUs.gateway ?? { failed: 'n/a' }, 0) : 'n/a';
  const relay = r.load.relay.ok
    ? show(r.load.relay.value.cpu.perCallUs.gateway ?? { failed: 'n/a' }, 0)
    : 'n/a';
  return [
    check(
      '11. Idle RSS ≤ 100 MB (npm start, empty pool)',
      get(m.prod, (v) => v.idle.resident.rssMb),
      (v) => v <= 100,
      mb,
    ),
    check(
      `11. RSS ≤ 1 KB per proxy (${at} proxies from SQLite)`,
      perProxyKb(ctx, r).rss,
      (v) => v <= 1,
      (v) => `${v.toFixed(2)} KB`,
    ),
    withContext(
      check(
        '11. Peak RSS under workloads 1-3 ≤ 200 MB (npm start)',
        peakUnderLoad(r),
        (v) => v <= 200,
        () => peaks(r),
      ),
      floor(
        "the bare relay under load 3 with Rota's heap flags",
        get(r.load.relayW3, (v) => v.peakMb),
        mb,
      ),
    ),
    withContext(
      check(
        '11. Gateway CPU per call ≤ 1.15× the bare relay (load 1)',
        cpuRatio(r),
        (v) => v <= 1.15,
        (v) => `${v.toFixed(2)}×: ${gw(r.load.rota.get('semi16'))} vs ${relay} µs`,
      ),
      floor('the Fastify relay alone', cpuRatio(r, r.load.fastifyRelay), (v) => `${v.toFixed(2)}×`),
    ),
    withContext(
      check('11. Workload 1 ≥ 50% of the direct path (npm start)', shareOfDirect(r), (v) => v >= 0.5, pct),
      floor('the bare relay', shareOfDirect(r, r.load.relay), pct),
    ),
    check(
      '11. Start-up ≤ 0.5 s, empty memory store',
      get(m.prod, (v) => median(v.readyMs)),
      (v) => v <= 500,
      s,
    ),
    check(
      `11. Start-up ≤ 1.5 s, ${at} proxies in SQLite`,
      get(m.sqliteFull, (v) => median(v.readyMs)),
      (v) => v <= 1500,
      s,
    ),
    check(
      '11. Production install ≤ 80 MB',
      get(r.install, (v) => v.diskMb),
      (v) => v <= 80,
      (v) => `${v.toFixed(1)} MB on disk`,
    ),
  ];
}

function idleBreakdown(r: LeanResults): string | null {
  const bare = idle(r.memory.bare);
  const prod = r.memory.prod.ok ? r.memory.prod.value.idle : null;
  if (!bare || !prod) return null;
  const b = bare.resident;
  const p = prod.resident;
  const h = prod.heap;
  const heap = h
    ? `; V8's heap is ${fmt(h.committedMb, 1)} MB committed (${fmt(h.usedMb, 1)} MB used, young generation ` +
      `${fmt(h.newSpaceMb, 1)} MB committed), external memory ${fmt(h.externalMb, 1)} MB`
    : '';
  return (
    `Idle RSS: an empty Node process already takes ${fmt(b.rssMb, 1)} MB (${fmt(b.anonMb, 1)} MB anonymous, ` +
    `${fmt(b.fileMb, 1)} MB pages of the node binary and libraries). Rota as \`npm start\` runs it takes ` +
    `${fmt(p.rssMb, 1)} MB: ${fmt(p.fileMb - b.fileMb, 1)} MB more file-backed pages (more of the binary in use, ` +
    `native add-ons) and ${fmt(p.anonMb - b.anonMb, 1)} MB more anonymous memory${heap}.`
  );
}

function earlierPeaks(r: LeanResults): string | null {
  const rows = r.earlier
    .flatMap((o) => o.rows)
    .filter((x) => x.metric === 'peak RSS, MB' && /^[123]\./.test(x.workload));
  if (rows.length === 0) return null;
  const text = rows.map((x) => `${x.workload.split(' (')[0]}: ${show(x.rota, 1)} MB`).join('; ');
  return `Workloads 1-3 of this run (Rota started as npm start starts it) peaked at: ${text}.`;
}

export function breakdown(ctx: Ctx, r: LeanResults): string[] {
  const per = perProxyKb(ctx, r);
  const lines = [idleBreakdown(r), earlierPeaks(r)];
  lines.push(
    `Per proxy (${fmt(ctx.scaleProxies, 0)} loaded from SQLite, against an empty SQLite file): ${show(per.rss, 2)} KB of ` +
      `RSS, ${show(per.heap, 2)} KB of V8 heap used (garbage of the load not yet collected included in both).`,
  );
  return lines.filter((l): l is string => l !== null);
}

/** Under the load table: where the CPU and throughput targets stand against the bare relay. */
export function loadBreakdown(r: LeanResults): string[] {
  return [...load1Breakdown(r), ...load3Floor(r)];
}

/** Load 3's peak RSS against the bare relay's under the same load: the runtime's floor for it. */
function load3Floor(r: LeanResults): string[] {
  const rota = r.load.rota.get('w3');
  const { relayW3, relayW3Default } = r.load;
  if (!rota?.ok || !relayW3.ok) return [];
  const gw = (x: GatewayRun) => x.cpu.perCallUs.gateway ?? Number.NaN;
  const dflt = relayW3Default.ok ? ` (${fmt(relayW3Default.value.peakMb, 1)} MB with V8's defaults)` : '';
  return [
    `Under load 3 (1 MiB answers, 10 connections) the bare relay peaks at ${fmt(relayW3.value.peakMb, 1)} MB of RSS ` +
      `with Rota's heap flags${dflt}, at ${fmt(gw(relayW3.value), 0)} µs of CPU per call; Rota peaks at ` +
      `${fmt(rota.value.peakMb, 1)} MB at ${fmt(gw(rota.value), 0)} µs: the peak comes with the load itself ` +
      '(10 answers of 1 MiB in flight, each read, decoded and JSON-encoded), as much for a minimal Node gateway as for Rota.',
  ];
}

function load1Breakdown(r: LeanResults): string[] {
  const relay = r.load.relay;
  const rota = r.load.rota.get('semi16');
  const d = directRps(r.load);
  if (!relay.ok || !rota?.ok || !isNum(d)) return [];
  const gw = (x: GatewayRun) => x.cpu.perCallUs.gateway ?? Number.NaN;
  const fr = r.load.fastifyRelay;
  const framework = fr.ok
    ? ` The same relay on Rota's HTTP stack (Fastify with the request id, security headers, CORS, rate limit, ` +
      `a validated body and one log line, none of the gateway) spends ${fmt(gw(fr.value), 0)} µs per call ` +
      `(${fmt(gw(fr.value) / gw(relay.value), 2)}× the bare relay): the framework layer alone costs ` +
      `${fmt(gw(fr.value) - gw(relay.value), 0)} µs per call, against a target that leaves ` +
      `${fmt(0.15 * gw(relay.value), 0)} µs (15%) for the framework and the gateway together.`
    : '';
  return [
    `Under load 1 the bare relay itself reaches ${fmt((100 * goodput(relay.value)) / d, 1)}% of the direct path at ` +
      `${fmt(gw(relay.value), 0)} µs of CPU per call; Rota as \`npm start\` runs it reaches ` +
      `${fmt((100 * goodput(rota.value)) / d, 1)}% at ${fmt(gw(rota.value), 0)} µs, ${fmt(gw(rota.value) - gw(relay.value), 0)} µs ` +
      `more per call (Fastify's pipeline, validation, logging, metrics, selection and breaker bookkeeping).${framework}`,
  ];
}

/** Under the start-up table: how much of an empty start an empty Node process already takes. */
export function startBreakdown(r: LeanResults): string[] {
  const m = r.memory;
  if (!m.prod.ok || !m.wrapper.ok) return [];
  const empty = median(m.prod.value.readyMs);
  const node = m.wrapper.value.bareNodeMs;
  const full = m.sqliteFull.ok ? median(m.sqliteFull.value.readyMs) : null;
  const load = full === null ? '' : `; loading the pool-scale file adds ${fmt(full - empty, 0)} ms to that`;
  return [
    `Start-up: ${fmt(empty, 0)} ms to the first 200 of /ready with an empty store, of which ${fmt(node, 0)} ms is ` +
      `what an empty Node process takes to start and exit${load}.`,
  ];
}
