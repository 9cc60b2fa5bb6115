import { join } from 'node:path';
import type { Ctx } from '../lib/context.ts';
import { CpuSplit } from '../lib/cpu.ts';
import { canConnect, freePort, sleep, startProcess } from '../lib/proc.ts';
import { failedCell } from '../lib/report.ts';
import { addProxies, api, ROOT, requestBody } from '../lib/rota.ts';
import { GROWTH_FLAG, START_FLAGS, startRotaProd } from '../lib/rota-prod.ts';
import { MB, RssWatch, waitForIdleProcess } from '../lib/rss.ts';
import { measuredTree } from '../lib/tree.ts';
import { type WrkResult, wrk } from '../lib/wrk.ts';
import type { Outcome } from './lean-memory.ts';

/**
 * Workload 11 under load, every gateway a fresh process measured alone like in workloads 1-3 and 7: the
 * direct path (wrk → squid) before and after; the bare and Fastify relays of workload 7; Rota as `npm start` runs it
 * with the workload-1 load (small JSON, 50 connections), then the same with --max-semi-space-size 8, 32
 * and unset, and with the loads of workloads 2 (1 connection) and 3 (1 MiB bodies, 10 connections).
 */
export interface GatewayRun {
  readonly w: WrkResult;
  readonly peakMb: number;
  /** CPU per call, µs: the gateway, squid, the target (the harness process); and the machine's idle %. */
  readonly cpu: ReturnType<CpuSplit['stop']>;
}

export type Variant = 'semi16' | 'semi8' | 'semi32' | 'unset' | 'nogrow' | 'w2' | 'w3' | 'w3nogrow';

/** Rota's heap flags that apply to any Node process (--expose-gc only serves Rota's trimmer). */
const RELAY_HEAP_FLAGS = START_FLAGS.filter((f) => f !== '--expose-gc');

/** npm start's flags without the old-generation growth cap: V8's own heap growing. */
const NO_GROWTH_CAP = START_FLAGS.filter((f) => f !== GROWTH_FLAG);

export const VARIANTS: Readonly<Record<Variant, { flags: readonly string[]; conns: number; big: boolean }>> =
  {
    semi16: { flags: START_FLAGS, conns: 50, big: false },
    semi8: { flags: ['--max-semi-space-size=8', '--expose-gc', GROWTH_FLAG], conns: 50, big: false },
    semi32: { flags: ['--max-semi-space-size=32', '--expose-gc', GROWTH_FLAG], conns: 50, big: false },
    unset: { flags: ['--expose-gc', GROWTH_FLAG], conns: 50, big: false },
    nogrow: { flags: NO_GROWTH_CAP, conns: 50, big: false },
    w2: { flags: START_FLAGS, conns: 1, big: false },
    w3: { flags: START_FLAGS, conns: 10, big: true },
    w3nogrow: { flags: NO_GROWTH_CAP, conns: 10, big: true },
  };

export interface LoadFigures {
  readonly directBefore: Outcome<GatewayRun>;
  readonly directAfter: Outcome<GatewayRun>;
  readonly relay: Outcome<GatewayRun>;
  /** The same relay on Rota's HTTP stack (bench/reference/fastify-relay.ts, workload 7's), load 1. */
  readonly fastifyRelay: Outcome<GatewayRun>;
  /** The bare relay under load 3, with Rota's heap flags and with V8's defaults. */
  readonly relayW3: Outcome<GatewayRun>;
  readonly relayW3Default: Outcome<GatewayRun>;
  readonly rota: ReadonlyMap<Variant, Outcome<GatewayRun>>;
}

function split(ctx: Ctx, gatewayPid?: number): CpuSplit {
  const pids: Record<string, number> = { squid: ctx.squid?.proc.pid ?? -1, target: process.pid };
  if (gatewayPid !== undefined) pids.gateway = gatewayPid;
  return new CpuSplit(pids);
}

async function measureGateway(
  ctx: Ctx,
  base: string,
  pid: number,
  conns: number,
  big: boolean,
): Promise<GatewayRun> {
  const opts = {
    url: `${base}/api/v1/request`,
    method: 'POST',
    body: requestBody(big ? ctx.target.bigUrl : ctx.target.jsonUrl),
    headers: { 'Content-Type': 'application/json' },
    connections: conns,
    timeoutS: 30,
  };
  await wrk({ ...opts, durationS: ctx.warmS });
  await waitForIdleProcess(pid, 60_000);
  const watch = new RssWatch(pid);
  const cpu = split(ctx, pid);
  const w = await wrk({ ...opts, durationS: ctx.loadS });
  const figures = cpu.stop(w.requests);
  return { w, peakMb: watch.stop() / MB, cpu: figures };
}

async function direct(ctx: Ctx): Promise<GatewayRun> {
  const port = ctx.squid?.ports[0];
  if (port === undefined) throw new Error(`squid: ${ctx.squidError}`);
  const o = { url: `http://127.0.0.1:${port}/`, path: ctx.target.jsonUrl, connections: 50, timeoutS: 30 };
  await wrk({ ...o, durationS: ctx.warmS });
  const cpu = split(ctx);
  const w = await wrk({ ...o, durationS: ctx.loadS });
  return { w, peakMb: 0, cpu: cpu.stop(w.requests) };
}

/**
 * bench/reference/relay.ts, started as workload 7 starts it (load 1), or under load 3 with Node flags:
 * Rota's heap flags or none, for the floor of a Node gateway's peak RSS with 1 MiB answers. With
 * `script`, another reference of workload 7 (the Fastify relay: the framework's own floor).
 */
async function relay(
  ctx: Ctx,
  o: { flags: readonly string[]; conns: number; big: boolean; script?: string },
): Promise<GatewayRun> {
  const ports = ctx.squid?.ports ?? [];
  const port = await freePort();
  const script = o.script ?? 'relay.ts';
  const proc = startProcess(
    'lean-relay',
    process.execPath,
    [...o.flags, join(ROOT, 'bench', 'reference', script), String(port), ports.join(',')],
    {
      logPath: join(ctx.workDir, 'logs', `lean-${script.replace('.ts', '')}.log`),
    },
  );
  try {
    const deadline = Date.now() + 15_000;
    while (!(await canConnect(port))) {
      if (proc.hasExited() || Date.now() > deadline)
        throw new Error(`the relay did not start: see ${proc.logPath}`);
      await sleep(20);
    }
    return await measureGateway(ctx, `http://127.0.0.1:${port}`, proc.pid, o.conns, o.big);
  } finally {
    await proc.stop();
  }
}

async function rota(ctx: Ctx, v: Variant): Promise<GatewayRun> {
  const { flags, conns, big } = VARIANTS[v];
  const r = await startRotaProd({ name: `lean-${v}`, workDir: ctx.workDir, flags });
  try {
    await addProxies(
      r.base,
      (ctx.squid?.ports ?? []).map((p) => ({ url: `http://127.0.0.1:${p}` })),
    );
    const probe = await api(r.base, 'POST', '/api/v1/request', { url: ctx.target.jsonUrl, method: 'GET' });
    if (probe.status !== 200) throw new Error(`probe through Rota answered ${probe.status}`);
    return await measureGateway(ctx, r.base, r.proc.pid, conns, big);
  } finally {
    await r.stop();
  }
}

async function one(
  ctx: Ctx,
  label: string,
  notes: string[],
  f: () => Promise<GatewayRun>,
): Promise<Outcome<GatewayRun>> {
  try {
    return { ok: true, value: await measuredTree({ ctx, label: `11. ${label}`, notes }, f) };
  } catch (e) {
    ctx.log(`  lean: ${label} failed: ${(e as Error).stack ?? e}`);
    return { ok: false, reason: failedCell(e).failed };
  }
}

/** Every load figure failed for one reason (squid missing, the build failed). */
export function failedLoad(reason: string): LoadFigures {
  const failed = { ok: false as const, reason };
  return {
    directBefore: failed,
    directAfter: failed,
    relay: failed,
    fastifyRelay: failed,
    relayW3: failed,
    relayW3Default: failed,
    rota: new Map(),
  };
}

export async function measureLoad(ctx: Ctx, notes: string[]): Promise<LoadFigures> {
  if (!ctx.squid) return failedLoad(`squid: ${ctx.squidError}`);
  ctx.log(
    `  lean: direct, relay, Rota (npm start), the Fastify relay, direct; then semi-space 8, 32, unset, no growth cap; loads 2 and 3 (and 3 without the cap); the bare relay under load 3 (${ctx.loadS} s each)`,
  );
  const directBefore = await one(ctx, 'direct path (before)', notes, () => direct(ctx));
  const relayRun = await one(ctx, 'bare relay', notes, () =>
    relay(ctx, { flags: [], conns: 50, big: false }),
  );
  const rotaRuns = new Map<Variant, Outcome<GatewayRun>>();
  rotaRuns.set('semi16', await one(ctx, 'Rota, npm start', notes, () => rota(ctx, 'semi16')));
  const fastifyRelay = await one(ctx, 'Fastify relay', notes, () =>
    relay(ctx, { flags: [], conns: 50, big: false, script: 'fastify-relay.ts' }),
  );
  const directAfter = await one(ctx, 'direct path (after)', notes, () => direct(ctx));
  for (const v of ['semi8', 'semi32', 'unset', 'nogrow', 'w2', 'w3', 'w3nogrow'] as const) {
    rotaRuns.set(v, await one(ctx, `Rota, ${v}`, notes, () => rota(ctx, v)));
  }
  const w3 = { conns: VARIANTS.w3.conns, big: true };
  const relayW3 = await one(ctx, 'bare relay, load 3', notes, () =>
    relay(ctx, { ...w3, flags: RELAY_HEAP_FLAGS }),
  );
  const relayW3Default = await one(ctx, 'bare relay, load 3, V8 defaults', notes, () =>
    relay(ctx, { ...w3, flags: [] }),
  );
  return {
    directBefore,
    directAfter,
    relay: relayRun,
    fastifyRelay,
    relayW3,
    relayW3Default,
    rota: rotaRuns,
  };
}
