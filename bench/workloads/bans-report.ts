import type { Ctx } from '../lib/context.ts';
import type { DriveResult } from '../lib/pool-tools.ts';
import { type Cell, check, fmt, isNum, type TargetCheck, type WorkloadOutput } from '../lib/report.ts';
import { mdTable, section, show } from '../lib/section.ts';
import type { WrkResult } from '../lib/wrk.ts';
import type { HostsResult, ThreadCounts } from '../lib/wrk-hosts.ts';

export type Outcome<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly reason: string };

export interface LoadFigures {
  /** threads[0]: host A, threads[1]: host B. */
  readonly w: HostsResult;
  readonly peakMb: number;
  /** GET bans?host=A total at the end of the run. */
  readonly cooledA: number;
  /** The site's answers by `${host} ${egress}`. */
  readonly siteCounts: ReadonlyMap<string, { served: number; banned: number }>;
}

export interface SelectionFigures {
  readonly pool: number;
  readonly importS: number;
  readonly drive: DriveResult;
  readonly withHost: WrkResult;
  readonly plain: WrkResult;
  readonly cooledPicks: number;
  readonly worstMs: number;
  readonly usualMs: number;
}

export interface BansResults {
  readonly before: Outcome<LoadFigures>;
  readonly bans: Outcome<LoadFigures>;
  readonly after: Outcome<LoadFigures>;
  readonly selection: Outcome<SelectionFigures>;
}

const W = 'Workload 9: bans and cool-downs (smart rotation)';

function per(f: LoadFigures, host: 0 | 1, v: (t: ThreadCounts, f: LoadFigures) => number | null): Cell {
  const t = f.w.threads[host];
  if (t === undefined) return { failed: 'no counts' };
  return v(t, f) ?? { failed: 'no calls' };
}

const ratio = (a: number, b: number) => (b > 0 ? a / b : null);
const success = (t: ThreadCounts, f: LoadFigures) => ratio(100 * t.ok, t.calls + f.w.noAnswer);
const rps = (t: ThreadCounts, f: LoadFigures) => t.ok / f.w.durationS;
const attempts = (t: ThreadCounts) => ratio(t.attempts, t.calls);
const lateAttempts = (t: ThreadCounts) => ratio(t.lateAttempts, t.lateCalls);

function sum(f: LoadFigures, host: string, k: 'served' | 'banned'): number {
  let n = 0;
  for (const [key, c] of f.siteCounts) if (key.startsWith(`${host} `)) n += c[k];
  return n;
}

type LoadRow = [string, number, (f: LoadFigures) => Cell];

const LOAD_ROWS: readonly LoadRow[] = [
  ['host A: successful calls/s', 0, (f) => per(f, 0, rps)],
  ['host A: success rate, % (target status 200)', 2, (f) => per(f, 0, success)],
  ['host A: upstream attempts per call, whole run', 4, (f) => per(f, 0, attempts)],
  ['host A: upstream attempts per call after the first 5 s', 4, (f) => per(f, 0, lateAttempts)],
  ['host B: successful calls/s', 0, (f) => per(f, 1, rps)],
  ['host B: success rate, %', 2, (f) => per(f, 1, success)],
  ['host B: upstream attempts per call', 4, (f) => per(f, 1, attempts)],
  ['calls with no answer (wrk timeouts, socket errors)', 0, (f) => f.w.noAnswer],
  ['p50 latency, both hosts, ms', 2, (f) => f.w.p50Ms],
  ['p99 latency, both hosts, ms', 2, (f) => f.w.p99Ms],
  ['403s the site sent on host A', 0, (f) => sum(f, 'A', 'banned')],
  ['answers the site served on host A from a banned address', 0, (f) => servedFromBanned(f)],
  ['cool-downs for host A at the end (GET bans)', 0, (f) => f.cooledA],
  ['peak RSS, MB', 1, (f) => f.peakMb],
];

function servedFromBanned(f: LoadFigures): number {
  let n = 0;
  for (const [key, c] of f.siteCounts) if (key.startsWith('A ') && c.banned > 0) n += c.served;
  return n;
}

function loadCell(o: Outcome<LoadFigures>, v: (f: LoadFigures) => Cell): Cell {
  return o.ok ? v(o.value) : { failed: o.reason };
}

function loadTable(r: BansResults): string {
  const runs = [r.before, r.bans, r.after];
  return mdTable(
    ['Metric', 'no bans (before)', '3 of 10 banned on host A', 'no bans (after)'],
    LOAD_ROWS.map(([metric, d, v]) => [metric, ...runs.map((o) => show(loadCell(o, v), d))]),
  );
}

function selectionTable(s: Outcome<SelectionFigures>): string {
  const c = (v: (f: SelectionFigures) => number): Cell => (s.ok ? v(s.value) : { failed: s.reason });
  const rows: [string, number, Cell][] = [
    ['proxies in the pool (one import)', 0, c((f) => f.pool)],
    ['import time, s', 2, c((f) => f.importS)],
    ['POST request calls to the site that bans everyone', 0, c((f) => f.drive.calls)],
    ['time to make the cool-downs, s', 1, c((f) => f.drive.seconds)],
    ['active cool-downs for that host (GET bans total)', 0, c((f) => f.drive.cooled)],
    ['GET rotate?host= p50, ms', 3, c((f) => f.withHost.p50Ms)],
    ['GET rotate?host= p99, ms', 3, c((f) => f.withHost.p99Ms)],
    ['GET rotate?host= max, ms', 3, c((f) => f.withHost.maxMs)],
    ['GET rotate?host= calls/s (1 connection)', 0, c((f) => f.withHost.rps)],
    ['GET rotate (no host) p50, ms', 3, c((f) => f.plain.p50Ms)],
    ['GET rotate (no host) p99, ms', 3, c((f) => f.plain.p99Ms)],
    ['of 50 picks for the host, proxies cooling down for it', 0, c((f) => f.cooledPicks)],
    [
      'first pick of a fresh cursor at the head of the cooled block, ms (median of 5)',
      2,
      c((f) => f.worstMs),
    ],
    ['an ordinary pick, same client, ms (median of 21)', 2, c((f) => f.usualMs)],
  ];
  return mdTable(
    ['Metric', 'Rota'],
    rows.map(([m, d, v]) => [m, show(v, d)]),
  );
}

function intro(ctx: Ctx): string[] {
  const d = Math.max(ctx.loadS, 10);
  const n = fmt(ctx.scaleProxies, 0);
  return [
    'Command: `npm run bench -- --only=bans` (part of `npm run bench`). Ten upstream proxies are one squid',
    '(bench/lib/squid-egress.ts) on ten loopback ports, each leaving from an address of its own',
    '(`tcp_outgoing_address` 127.0.0.21-30, checked through every port before the runs). The site',
    '(bench/lib/ban-site.ts, in the harness process) answers the 48-byte JSON on host B (127.0.0.1) to',
    'everyone and on host A (127.0.0.2) answers 403 to 127.0.0.22, .25 and .28. Rota is started like in',
    'the other workloads (listeners off), the ten proxies added, default ban policy (403/429, 300 s).',
    `wrk, two threads of 25 connections each (50 in all), one calling host A and one host B through`,
    `\`POST /api/v1/request\` for ${d} s after a ${ctx.warmS} s warm-up on host B only (bench/wrk/hosts.lua reads`,
    "`status_code` and `attempts` from every answer; a success is the target's 200). The same run with",
    'no address banned, before and after (a fresh Rota each time), is the yardstick for host B; "after',
    'the first 5 s" counts answers received 5-6 s or more after wrk started (Lua has whole seconds).',
    '',
    `Selection cost: a fresh Rota, ${n} proxies imported in one \`POST proxies/import\` (distinct`,
    'usernames on the ten squid ports), then POST request calls (8 at a time) to host C (127.0.0.3), which',
    'answers 403 to everyone, until `GET bans?host=127.0.0.3` counts a tenth of the pool; each call bans up',
    'to 3 proxies. Once Rota is at rest again (5 s, for the keep-alive connections of those proxies to',
    `close), \`GET rotate?host=127.0.0.3\` with wrk at 1 connection (${Math.min(ctx.loadS, 10)} s after ${ctx.warmS} s), the same`,
    'without host, and single picks timed from the harness (an HTTP round trip each). The cool-downs were',
    "made by round-robin from the pool's first member on, so they form one block at the head of its order:",
    'the first pick of a fresh round-robin cursor (a strategy switch makes one) steps over all of them.',
  ];
}

function pooledB(r: BansResults): Cell {
  const vals = [r.before, r.after].filter((o) => o.ok).map((o) => loadCell(o, (f) => per(f, 1, rps)));
  const nums = vals.filter(isNum);
  if (nums.length === 0) return { failed: 'no run without bans' };
  return nums.reduce((a, b) => a + b, 0) / nums.length;
}

function targets(ctx: Ctx, r: BansResults): TargetCheck[] {
  const a = loadCell(r.bans, (f) => per(f, 0, success));
  const b = loadCell(r.bans, (f) => per(f, 1, success));
  const worst = isNum(a) && isNum(b) ? Math.min(a, b) : isNum(a) ? b : a;
  const late = loadCell(r.bans, (f) => per(f, 0, lateAttempts));
  const bRps = loadCell(r.bans, (f) => per(f, 1, rps));
  const base = pooledB(r);
  const rel: Cell = isNum(bRps) && isNum(base) ? bRps / base : isNum(bRps) ? base : bRps;
  const p50: Cell = r.selection.ok ? r.selection.value.withHost.p50Ms : { failed: r.selection.reason };
  const at =
    ctx.scaleProxies === 100_000 ? '100,000 proxies' : `${fmt(ctx.scaleProxies, 0)} proxies (--quick)`;
  return [
    check(
      '9. Bans: success rate 100% on both hosts',
      worst,
      (v) => v >= 100,
      (v) => `host A ${show(a, 2)}%, host B ${show(b, 2)}% (lower: ${v.toFixed(2)}%)`,
    ),
    check(
      '9. Bans: ≤ 1.05 upstream attempts per call on host A after the first 5 s',
      late,
      (v) => v <= 1.05,
      (v) => `${v.toFixed(4)} attempts/call`,
    ),
    check(
      '9. Bans: host B req/s within 5% of the run without bans',
      rel,
      (v) => v >= 0.95,
      (v) =>
        `${show(bRps, 0)} vs ${show(base, 0)} req/s (mean of before/after): ${((v - 1) * 100).toFixed(1)}%`,
    ),
    check(
      `9. Bans: GET rotate?host= p50 < 0.2 ms at ${at}, a tenth cooling down`,
      p50,
      (v) => v < 0.2,
      (v) => `${v.toFixed(3)} ms`,
    ),
  ];
}

function siteNote(r: BansResults): string[] {
  if (!r.bans.ok) return [];
  const f = r.bans.value;
  const byEgress = [...f.siteCounts]
    .filter(([k]) => k.startsWith('A '))
    .sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }))
    .map(([k, c]) => `${k.slice(2)} ${c.served}/${c.banned}`)
    .join(', ');
  return [`9. Bans: host A answers by exit address (served/403) in the run with bans: ${byEgress}.`];
}

export function bansOutput(ctx: Ctx, r: BansResults, notes: string[]): WorkloadOutput {
  const t = targets(ctx, r);
  const blocks = [
    { title: '9.1 Two hosts, 50 connections: three proxies banned on host A', table: loadTable(r) },
    {
      title: `9.2 Selection with ${fmt(ctx.scaleProxies, 0)} proxies, a tenth cooling down`,
      table: selectionTable(r.selection),
    },
  ];
  return {
    rows: [],
    targets: t,
    notes: [...notes, ...siteNote(r)],
    sections: [section(W, intro(ctx), blocks, t)],
  };
}
