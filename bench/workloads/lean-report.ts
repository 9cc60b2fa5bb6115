import type { Ctx } from '../lib/context.ts';
import type { InstallSize } from '../lib/install-size.ts';
import { type Cell, fmt, median, type Row, type WorkloadOutput } from '../lib/report.ts';
import { mdTable, section, show } from '../lib/section.ts';
import { failures } from '../lib/wrk.ts';
import type { Build } from './lean.ts';
import type { GatewayRun, LoadFigures, Variant } from './lean-load.ts';
import { type Idle, type MemoryFigures, type Outcome, STARTS, type Starts } from './lean-memory.ts';
import {
  breakdown,
  directRps,
  get,
  goodput,
  leanTargets,
  loadBreakdown,
  startBreakdown,
} from './lean-targets.ts';

export interface LeanResults {
  readonly build: Outcome<Build>;
  readonly memory: MemoryFigures;
  readonly load: LoadFigures;
  readonly install: Outcome<InstallSize>;
  readonly earlier: readonly { readonly rows: readonly Row[] }[];
}

const W = 'Workload 11: a lean core (memory, start-up, CPU, install size)';

function idleRow(title: string, o: Outcome<Idle>): string[] {
  const h = (f: (v: NonNullable<Idle['heap']>) => number) =>
    o.ok && o.value.heap ? fmt(f(o.value.heap), 1) : o.ok ? '—' : `failed: ${o.reason}`;
  return [
    title,
    show(
      get(o, (v) => v.resident.rssMb),
      1,
    ),
    show(
      get(o, (v) => v.resident.anonMb),
      1,
    ),
    show(
      get(o, (v) => v.resident.fileMb),
      1,
    ),
    h((x) => x.committedMb),
    h((x) => x.usedMb),
    h((x) => x.newSpaceMb),
    h((x) => x.externalMb),
  ];
}

const idleOfStarts = (o: Outcome<Starts>): Outcome<Idle> => (o.ok ? { ok: true, value: o.value.idle } : o);

function idleTable(ctx: Ctx, m: MemoryFigures): string {
  const n = fmt(ctx.scaleProxies, 0);
  return mdTable(
    ['Process (idle, 3 s after ready)', 'RSS, MB', 'anonymous', 'file-backed', 'V8 heap committed'].concat([
      'V8 heap used',
      'young generation committed',
      'external',
    ]),
    [
      idleRow("empty Node process (`node -e 'setInterval(()=>{},1e9)'`)", m.bare),
      idleRow(`Rota, \`npm start\` command, empty pool (median of ${STARTS})`, idleOfStarts(m.prod)),
      idleRow(
        'Rota, `ROTA_NODE_FLAGS=off node dist/main.js` (no semi-space cap, no --expose-gc: no heap trimmer)',
        m.noFlag,
      ),
      idleRow('Rota, `npm start` flags plus --enable-source-maps', m.sourceMaps),
      idleRow('Rota, `node src/main.ts` (type stripping, as `npm run dev` runs it)', m.source),
      idleRow('Rota, `npm start` command, empty SQLite file', m.sqliteEmpty),
      idleRow(
        `Rota, \`npm start\` command, ${n} proxies in SQLite (median of ${STARTS})`,
        idleOfStarts(m.sqliteFull),
      ),
    ],
  );
}

function startRow(title: string, o: Outcome<Starts>): string[] {
  if (!o.ok) return [title, `failed: ${o.reason}`, '', ''];
  const ms = o.value.readyMs;
  return [title, fmt(median(ms), 0), fmt(Math.max(...ms), 0), ms.map((x) => fmt(x, 0)).join(', ')];
}

function startTable(ctx: Ctx, m: MemoryFigures): string {
  const w = m.wrapper;
  const one = (title: string, v: Cell): string[] => [title, show(v, 0), '', ''];
  return mdTable(
    ['Start-up, spawn of node → first 200 of /api/v1/ready', 'median, ms', 'slowest, ms', 'each, ms'],
    [
      startRow('empty memory store', m.prod),
      startRow(
        'empty memory store, `ROTA_COMPILE_CACHE=off` (every module compiled, as a first start)',
        m.coldCache,
      ),
      startRow(
        'empty memory store, `node dist/main.js` without the flags (Rota re-executes itself with them)',
        m.reexec,
      ),
      startRow(`${fmt(ctx.scaleProxies, 0)} proxies in SQLite`, m.sqliteFull),
      one(
        '`npm start` adds: `bash scripts/with-node.sh true` (median of 3)',
        get(w, (v) => v.withNodeMs),
      ),
      one(
        '`npm start` adds: `node scripts/build.ts`, dist/ up to date (median of 3)',
        get(w, (v) => v.buildCheckMs),
      ),
      one(
        'for scale: an empty Node process, spawn to exit (`node -e 0`, median of 3)',
        get(w, (v) => v.bareNodeMs),
      ),
    ],
  );
}

const TITLES: Record<Variant, string> = {
  semi16: 'Rota, `npm start` (--max-semi-space-size=16 --heap-growing-percent=50), load 1',
  semi8: 'Rota, --max-semi-space-size=8, load 1',
  semi32: 'Rota, --max-semi-space-size=32, load 1',
  unset: 'Rota, no semi-space flag (V8 default), load 1',
  nogrow: 'Rota, `npm start` without --heap-growing-percent (V8 default growth), load 1',
  w2: 'Rota, `npm start`, load 2 (1 connection)',
  w3: 'Rota, `npm start`, load 3 (1 MiB bodies, 10 connections)',
  w3nogrow: 'Rota, `npm start` without --heap-growing-percent, load 3',
};

function loadRow(title: string, o: Outcome<GatewayRun> | undefined, direct: Cell, share: boolean): string[] {
  if (!o) return [title, 'not run', '', '', '', '', '', '', ''];
  if (!o.ok) return [title, `failed: ${o.reason}`, '', '', '', '', '', '', ''];
  const r = o.value;
  const us = (v: number | null | undefined) => (v == null ? '—' : fmt(v, 0));
  const pct = share && typeof direct === 'number' ? fmt((100 * goodput(r)) / direct, 1) : '—';
  return [
    title,
    fmt(goodput(r), 0),
    pct,
    fmt(r.w.p50Ms, 2),
    fmt(r.w.p99Ms, 2),
    r.peakMb > 0 ? fmt(r.peakMb, 1) : '—',
    us(r.cpu.perCallUs.gateway),
    us(r.cpu.perCallUs.squid),
    `${fmt(r.cpu.idlePct, 0)}% / ${failures(r.w)}`,
  ];
}

function loadTable(l: LoadFigures): string {
  const d = directRps(l);
  const head = [
    'Run (fresh process each)',
    'successful req/s',
    '% of direct',
    'p50, ms',
    'p99, ms',
    'peak RSS, MB',
  ];
  head.push('gateway CPU per call, µs', 'squid CPU per call, µs', 'machine idle / failed calls');
  const rows = [
    loadRow('direct path, wrk → squid (before)', l.directBefore, d, false),
    loadRow('bare relay (bench/reference/relay.ts), load 1', l.relay, d, true),
    loadRow(TITLES.semi16, l.rota.get('semi16'), d, true),
    loadRow(
      "Fastify relay (bench/reference/fastify-relay.ts: the bare relay on Rota's HTTP stack), load 1",
      l.fastifyRelay,
      d,
      true,
    ),
    loadRow('direct path, wrk → squid (after)', l.directAfter, d, false),
    ...(['semi8', 'semi32', 'unset', 'nogrow'] as const).map((v) =>
      loadRow(TITLES[v], l.rota.get(v), d, true),
    ),
    ...(['w2', 'w3', 'w3nogrow'] as const).map((v) => loadRow(TITLES[v], l.rota.get(v), d, false)),
    loadRow("bare relay, load 3, Rota's heap flags (no --expose-gc)", l.relayW3, d, false),
    loadRow('bare relay, load 3, V8 defaults', l.relayW3Default, d, false),
  ];
  return mdTable(head, rows);
}

function installTable(i: Outcome<InstallSize>, b: Outcome<Build>): string {
  if (!i.ok) return mdTable(['Metric', 'Value'], [['npm ci --omit=dev', `failed: ${i.reason}`]]);
  const v = i.value;
  return mdTable(
    ['Production install (`npm ci --omit=dev`, package.json + package-lock.json only)', 'Value'],
    [
      ['npm', v.npmVersion],
      ['node_modules on disk (`du -sk`), MB', fmt(v.diskMb, 1)],
      ['node_modules apparent size (`du -sb`), MB', fmt(v.apparentMb, 1)],
      ['packages (folders with a package.json, nested ones too)', fmt(v.packages, 0)],
      ['largest packages on disk, MB', v.largest.map((p) => `${p.name} ${fmt(p.mb, 1)}`).join(', ')],
      ['time, s', fmt(v.seconds, 1)],
      [
        'dist/main.js and its chunks (the bundle npm start runs, not in node_modules), KB',
        show(
          get(b, (x) => x.distKb),
          0,
        ),
      ],
    ],
  );
}

function intro(ctx: Ctx, b: Outcome<Build>): string[] {
  const built = b.ok ? (b.value.rebuilt ? 'rebuilt it from src/ first' : 'found it up to date') : 'failed';
  return [
    'Command: `npm run bench -- --only=lean` (part of `npm run bench`). Rota is measured as `npm start` runs',
    'it: `node scripts/build.ts` (this run ' +
      built +
      '), then `node --max-semi-space-size=16 --expose-gc --heap-growing-percent=50 dist/main.js`',
    '(src/lib/node-flags.ts; started without them, Rota re-executes itself with them: a row of its own),',
    "spawned directly so that start-up is Rota's own (the wrapper and build check are timed apart),",
    'NODE_ENV=production, memory store unless said, listeners on free ports, the set-up of workloads 1-7.',
    'Memory is read 3 s after /ready: RSS split from /proc/<pid>/smaps_rollup (anonymous vs file-backed',
    "pages), V8's heap from Rota's own /metrics (prom-client's process metrics: heap size, used, the",
    `"new" space). The pool-scale file is workload 5's (${fmt(ctx.scaleProxies, 0)} proxies with username and password,`,
    "written by Rota's store module); RSS per proxy is its idle RSS minus that of an empty SQLite file.",
    `Loads (fresh process each, ${ctx.warmS} s warm-up then ${ctx.loadS} s, wrk 1 thread): load 1 is workload 1's (POST`,
    'request of the 48-byte /json, 50 connections), load 2 the same at 1 connection, load 3 the 1 MiB body',
    "at 10 connections; the bare relay is workload 7's; CPU per call is each process's user + system time",
    'over the measured run divided by the calls. The production install is `npm ci --omit=dev` in a temp',
    'folder holding only package.json and package-lock.json, with the npm of the Node running the harness',
    "(packages from the npm registry, or npm's local cache where it holds them).",
  ];
}

export function leanOutput(ctx: Ctx, r: LeanResults, notes: string[]): WorkloadOutput {
  const t = leanTargets(ctx, r);
  const blocks = [
    { title: '11.1 Idle memory', table: idleTable(ctx, r.memory), after: breakdown(ctx, r) },
    { title: '11.2 Start-up', table: startTable(ctx, r.memory), after: startBreakdown(r) },
    { title: '11.3 Under load', table: loadTable(r.load), after: loadBreakdown(r) },
    { title: '11.4 Production install', table: installTable(r.install, r.build) },
  ];
  return { rows: [], targets: t, notes, sections: [section(W, intro(ctx, r.build), blocks, t)] };
}
