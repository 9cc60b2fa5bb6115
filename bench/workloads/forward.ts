import type { Ctx } from '../lib/context.ts';
import { CpuSplit } from '../lib/cpu.ts';
import {
  FORWARD_NAMES,
  type ForwardName,
  type ForwardProxy,
  LISTENER_MISSING,
  type Subjects,
  startForwardProxies,
} from '../lib/forward-gateways.ts';
import { measured, quietGate } from '../lib/measured.ts';
import { waitForIdleProcess } from '../lib/rss.ts';
import {
  type BulkResult,
  failuresText,
  type IdleResult,
  type RateResult,
  runTunnelLoad,
} from '../lib/tunnels.ts';
import { type WrkResult, wrk } from '../lib/wrk.ts';
import { pooled } from './compare-rows.ts';
import { type CpuFigures, type ForwardResults, forwardOutput, type Outcome } from './forward-report.ts';
import { TITLES } from './forward-text.ts';

/**
 * Workload 8, the forward-proxy listeners: Rota's HTTP listener (ROTA_PROXY_PORT) next to squid itself,
 * Apify proxy-chain and a minimal relay on Rota's stack (bench/reference/forward-relay.ts), every one
 * chained to the same squid, under the same load, one at a time.
 *
 *   wrk / tunnel-load ──▶ squid ──▶ target                                     (direct)
 *   wrk / tunnel-load ──▶ Rota | proxy-chain | relay ──▶ squid (10 ports) ──▶ target
 *
 * 8.1 absolute-URI GET at 50 connections, 8.4 the same at 1 connection (wrk, the request line carrying
 * the target's absolute URI); 8.2 new CONNECT tunnels per second, 8.3 bulk download through one tunnel,
 * 8.5 5,000 idle tunnels (bench/lib/tunnel-load.ts, a load generator in a process of its own).
 */
export const BULK_BYTES = 64 * 1024 * 1024;
export const IDLE_TUNNELS = 5_000;
export const RATE_LOOPS = 50;

function available(s: ForwardProxy | Error | undefined, kind: 'get' | 'connect'): ForwardProxy {
  if (s === undefined) throw new Error('not started');
  if (s instanceof Error) throw s;
  const why = kind === 'get' ? s.getError : s.connectError;
  // The cell says only that; the run notes give the probe's whole answer.
  if (why !== null) throw new Error(why.startsWith(LISTENER_MISSING) ? LISTENER_MISSING : why);
  return s;
}

async function outcome<T>(f: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await f() };
  } catch (e) {
    return { ok: false, reason: ((e as Error).message ?? String(e)).split('\n')[0]!.slice(0, 160) };
  }
}

/** CPU per call of the proxy (none for direct: it is squid), squid, and the target (this process). */
function split(ctx: Ctx, s: ForwardProxy): CpuSplit {
  const pids: Record<string, number> = {};
  if (s.name !== 'direct') pids.proxy = s.pid;
  pids.squid = ctx.squid?.proc.pid ?? -1;
  pids.target = process.pid;
  return new CpuSplit(pids);
}

async function settle(s: ForwardProxy): Promise<void> {
  if (s.name !== 'direct') await waitForIdleProcess(s.pid, 60_000);
}

async function measureGet(ctx: Ctx, s: ForwardProxy, connections: number, notes: string[]) {
  const url = ctx.target.jsonUrl;
  const opts = {
    url: `http://127.0.0.1:${s.port}/`,
    path: url,
    headers: { Host: new URL(url).host },
    connections,
    timeoutS: 30,
  };
  ctx.log(`  absolute-URI GET: ${s.name} (${connections} connections, ${ctx.loadS} s)`);
  await wrk({ ...opts, durationS: ctx.warmS });
  await settle(s);
  const label = `${connections === 1 ? '8.4' : '8.1'} GET at ${connections} connection(s), ${TITLES[s.name]}`;
  return measured({ ctx, label, notes, redo: true }, async () => {
    const cpu = split(ctx, s);
    const result = await wrk({ ...opts, durationS: ctx.loadS });
    return { wrk: result, cpu: cpu.stop(result.requests) };
  });
}

/** 8.1 and 8.4: direct, Rota, proxy-chain, relay, direct again; the two direct runs pooled. */
async function getPhase(ctx: Ctx, subjects: Subjects, connections: number, notes: string[]) {
  const run = (n: ForwardName) =>
    outcome(() => measureGet(ctx, available(subjects.get(n), 'get'), connections, notes));
  const before = await run('direct');
  const out = new Map<ForwardName, Outcome<{ wrk: WrkResult; cpu: CpuFigures }>>();
  for (const n of FORWARD_NAMES.filter((x) => x !== 'direct')) out.set(n, await run(n));
  const after = await run('direct');
  if (before.ok && after.ok) {
    out.set('direct', {
      ok: true,
      value: { wrk: pooled(before.value.wrk, after.value.wrk), cpu: before.value.cpu },
    });
    notes.push(
      `${connections === 1 ? '8.4' : '8.1'} Absolute-URI GET at ${connections} connection(s), ` +
        'direct path before / after: ' +
        `${Math.round(before.value.wrk.rps)} / ${Math.round(after.value.wrk.rps)} req/s, p50 ` +
        `${before.value.wrk.p50Ms.toFixed(3)} / ${after.value.wrk.p50Ms.toFixed(3)} ms ` +
        '(the table pools both).',
    );
  } else out.set('direct', before.ok ? before : after);
  return out;
}

async function measureRate(
  ctx: Ctx,
  s: ForwardProxy,
  notes: string[],
): Promise<{ rate: RateResult; cpu: CpuFigures }> {
  const authority = new URL(ctx.target.jsonUrl).host;
  const job = { mode: 'rate', proxyPort: s.port, authority, path: '/json', loops: RATE_LOOPS } as const;
  ctx.log(`  CONNECT tunnels: ${s.name} (${RATE_LOOPS} loops, ${ctx.loadS} s)`);
  await runTunnelLoad({ ...job, durationS: ctx.warmS, maxTunnels: 200_000 });
  await settle(s);
  return measured({ ctx, label: `8.2 CONNECT tunnels, ${TITLES[s.name]}`, notes, redo: true }, async () => {
    const cpu = split(ctx, s);
    const rate = await runTunnelLoad({ ...job, durationS: ctx.loadS, maxTunnels: 2_000_000 });
    if (rate.tunnels === 0) throw new Error(`no tunnel completed: ${failuresText(rate.failed)}`);
    return { rate, cpu: cpu.stop(rate.tunnels) };
  });
}

async function measureBulk(ctx: Ctx, s: ForwardProxy, notes: string[]): Promise<BulkResult> {
  const authority = new URL(ctx.target.jsonUrl).host;
  const job = { mode: 'bulk', proxyPort: s.port, authority, path: `/stream?bytes=${BULK_BYTES}` } as const;
  const durationS = ctx.quick ? 2 : 10;
  ctx.log(`  bulk download through one tunnel: ${s.name} (${durationS} s)`);
  await runTunnelLoad({ ...job, durationS: 0 });
  await settle(s);
  const label = `8.3 bulk download, ${TITLES[s.name]}`;
  return measured({ ctx, label, notes, redo: true }, async () => {
    const bulk = await runTunnelLoad({ ...job, durationS });
    if (bulk.downloads === 0) throw new Error(`no download completed: ${failuresText(bulk.failed)}`);
    return bulk;
  });
}

async function measureIdle(ctx: Ctx, s: ForwardProxy, notes: string[]): Promise<IdleResult> {
  const authority = new URL(ctx.target.jsonUrl).host;
  ctx.log(`  ${IDLE_TUNNELS} idle tunnels: ${s.name}`);
  await settle(s);
  const job = {
    mode: 'idle',
    proxyPort: s.port,
    authority,
    path: '/json',
    count: IDLE_TUNNELS,
    holdS: ctx.quick ? 2 : 5,
    openConcurrency: 100,
    pid: s.pid,
  } as const;
  // Never measured twice: a second batch of tunnels would reuse the memory the first one grew.
  const label = `8.5 idle tunnels, ${TITLES[s.name]}`;
  return measured({ ctx, label, notes, redo: false }, () => runTunnelLoad(job));
}

async function eachSubject<T>(
  subjects: Subjects,
  f: (s: ForwardProxy) => Promise<T>,
): Promise<Map<ForwardName, Outcome<T>>> {
  const out = new Map<ForwardName, Outcome<T>>();
  for (const n of FORWARD_NAMES) out.set(n, await outcome(() => f(available(subjects.get(n), 'connect'))));
  return out;
}

/** 8.3: direct before and after the gateways, pooled by bytes over time like the wrk runs. */
async function bulkPhase(
  ctx: Ctx,
  subjects: Subjects,
  notes: string[],
): Promise<Map<ForwardName, Outcome<BulkResult>>> {
  const out = await eachSubject(subjects, (s) => measureBulk(ctx, s, notes));
  const before = out.get('direct');
  const after = await outcome(() => measureBulk(ctx, available(subjects.get('direct'), 'connect'), notes));
  if (before?.ok && after.ok) {
    const a = before.value;
    const b = after.value;
    const bytes = a.bytes + b.bytes;
    const seconds = a.seconds + b.seconds;
    const failed = { ...a.failed };
    for (const [k, v] of Object.entries(b.failed)) failed[k] = (failed[k] ?? 0) + v;
    const mibps = bytes / (1024 * 1024) / seconds;
    out.set('direct', {
      ok: true,
      value: { bytes, seconds, mibps, downloads: a.downloads + b.downloads, failed },
    });
  }
  return out;
}

export async function runForward(ctx: Ctx) {
  const notes: string[] = [];
  const gate = quietGate(ctx, '8.');
  const first = await startForwardProxies(ctx, 'load');
  let results: Omit<ForwardResults, 'idle' | 'subjects'>;
  try {
    await gate.wait('8.1');
    const get50 = await getPhase(ctx, first.subjects, 50, notes);
    await gate.wait('8.4');
    const get1 = await getPhase(ctx, first.subjects, 1, notes);
    await gate.wait('8.2');
    const rate = await eachSubject(first.subjects, (s) => measureRate(ctx, s, notes));
    await gate.wait('8.3');
    const bulk = await bulkPhase(ctx, first.subjects, notes);
    results = { get50, get1, rate, bulk };
  } finally {
    for (const line of await first.stop()) notes.push(`8. Load phases: ${line}.`);
  }
  // Fresh proxies: the idle-tunnel figures (RSS, descriptors) must not carry what the load left behind.
  const second = await startForwardProxies(ctx, 'idle');
  let idle: Map<ForwardName, Outcome<IdleResult>>;
  try {
    await gate.wait('8.5');
    idle = await eachSubject(second.subjects, (s) => measureIdle(ctx, s, notes));
  } finally {
    for (const line of await second.stop()) notes.push(`8. Idle-tunnel phase: ${line}.`);
  }
  return forwardOutput(
    ctx,
    { ...results, idle, subjects: [first.subjects, second.subjects] },
    [gate.note(), ...notes],
    IDLE_TUNNELS,
  );
}
