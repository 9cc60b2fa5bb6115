import { forwardOptions, type Measured, measureWrk, postOptions } from '../lib/measure.ts';
import { PROXYWHIRL_VERSION, startProxywhirl } from '../lib/refs.ts';
import { alone, type Bound, type Ctx, type Row, type ScenarioResult, versus } from '../lib/report.ts';
import { probe, startRotaWithPool } from '../lib/rota.ts';
import { goodput, pooled, type WrkResult } from '../lib/wrk.ts';

/**
 * `POST /api/v1/request` (Rota's REST call: a GET through the pool, answered as a JSON envelope) against
 * the direct path (wrk straight through squid, run before and after Rota and pooled) and proxywhirl's
 * same call, at 50 connections (small JSON), 1 connection (latency) and 10 connections (1 MiB bodies).
 * Every phase starts both gateways afresh, so no figure carries what an earlier phase left.
 *
 *   wrk ──▶ squid ──▶ target                          (direct)
 *   wrk ──▶ Rota | proxywhirl ──▶ squid (10 ports) ──▶ target
 */
const PHASES = [
  { key: 'json50', connections: 50, big: false },
  { key: 'json1', connections: 1, big: false },
  { key: 'big10', connections: 10, big: true },
] as const;

type Phase = (typeof PHASES)[number];
type Runs = Record<'direct' | 'rota' | 'proxywhirl', Measured<WrkResult> | string>;

async function phaseRuns(ctx: Ctx, phase: Phase): Promise<Runs> {
  const url = phase.big ? ctx.target.bigUrl : ctx.target.jsonUrl;
  const ports = ctx.squid.ports;
  const o = { connections: phase.connections };
  const direct = () => measureWrk(ctx, { ...forwardOptions(ports[0]!, url), ...o }, null);
  const call = (base: string, pid: number, headers = {}) =>
    measureWrk(ctx, { ...postOptions(base, url, headers), ...o }, pid);
  ctx.log(`  POST request, ${phase.key}: direct, Rota, direct, proxywhirl`);
  const rotaOptions = { name: `post-${phase.key}`, workDir: ctx.workDir, nodeFlags: ctx.rotaFlags };
  const rota = await startRotaWithPool(rotaOptions, ports, url);
  // proxywhirl failing to start is a cell of the table, not the end of the scenario.
  const pw = await startProxywhirl(ctx.workDir, ports, ctx.proxywhirlError).catch(
    (e: unknown) => `proxywhirl: ${(e as Error).message}`,
  );
  try {
    if (typeof pw !== 'string') await probe(pw.base, url, pw.headers);
    const before = await direct();
    const mine = await call(rota.base, rota.proc.pid);
    const after = await direct();
    const proxywhirl = typeof pw === 'string' ? pw : await call(pw.base, pw.pid, pw.headers);
    return { rota: mine, direct: { ...before, load: pooled(before.load, after.load) }, proxywhirl };
  } finally {
    await rota.stop();
    if (typeof pw !== 'string') await pw.stop();
  }
}

type F = (w: WrkResult) => number;
const fig = (m: Measured<WrkResult> | string, f: F) => (typeof m === 'string' ? null : f(m.load));
const [p50, p99, mibps]: [F, F, F] = [(w) => w.p50Ms, (w) => w.p99Ms, (w) => w.mibps];

function rows(all: Record<Phase['key'], Runs>): Row[] {
  const S = 'POST request';
  const { json50: a, json1: b, big10: c } = all;
  const label = { direct: 'direct', proxywhirl: `proxywhirl ${PROXYWHIRL_VERSION}` };
  const cmp = (metric: string, r: Runs, f: F, ref: 'direct' | 'proxywhirl', bound?: Bound) =>
    versus(S, metric, fig(r.rota, f), label[ref], fig(r[ref], f), bound);
  const addedP50 = (fig(b.rota, p50) ?? Number.NaN) - (fig(b.direct, p50) ?? Number.NaN);
  const peaks = [a, b, c].map(({ rota: m }) => (typeof m === 'string' ? null : m.peakMb) ?? Number.NaN);
  const peak = peaks.some(Number.isNaN) ? null : Math.max(...peaks);
  const big = 'MiB/s, 1 MiB bodies, 10 conns';
  return [
    cmp('req/s, 50 conns', a, goodput, 'direct', { min: 0.5 }),
    cmp('req/s, 50 conns', a, goodput, 'proxywhirl', { min: 10 }),
    cmp('p99 ms, 50 conns', a, p99, 'direct'),
    cmp('p50 ms, 1 conn', b, p50, 'direct'),
    alone(S, 'added p50 ms, 1 conn', Number.isFinite(addedP50) ? addedP50 : null, { max: 0.5 }),
    cmp(big, c, mibps, 'direct'),
    cmp(big, c, mibps, 'proxywhirl'),
    alone(S, 'peak RSS MB, largest of the 3 loads', peak, { max: 200 }),
  ];
}

export async function post(ctx: Ctx): Promise<ScenarioResult> {
  const all: Partial<Record<Phase['key'], Runs>> = {};
  for (const phase of PHASES) all[phase.key] = await phaseRuns(ctx, phase);
  return { rows: rows(all as Record<Phase['key'], Runs>), raw: all };
}
