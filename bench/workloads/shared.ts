import { RssGroupWatch } from '../lib/cluster-kit.ts';
import type { Ctx } from '../lib/context.ts';
import { CpuSplit } from '../lib/cpu.ts';
import { failedCell, type WorkloadOutput } from '../lib/report.ts';
import { requestBody } from '../lib/rota.ts';
import { MB, waitForIdleProcess } from '../lib/rss.ts';
import { measuredTree } from '../lib/tree.ts';
import { wrk } from '../lib/wrk.ts';
import { type Cluster, poolTemplate, SHAPES, type Shape, startCluster } from './shared-cluster.ts';
import { measurePropagation } from './shared-propagation.ts';
import { type Outcome, type ShapeFigures, sharedOutput } from './shared-report.ts';

/**
 * Workload 10, several Rota instances as one: POST request (small JSON, 50 connections) through nginx
 * to 1, 2 and 3 instances, each with 1 or 2 workers, all on one SQLite file and one redis-server, next
 * to one instance with memory state at the same load (three runs each, alternating); then how fast a change on one
 * instance shows on the others under that load.
 */
/** Propagation: this many changes of each kind (PUT config, POST proxies), each polled on 2 instances. */
const CHANGES = 50;

async function loadOnce(ctx: Ctx, c: Cluster): Promise<ShapeFigures> {
  const o = {
    url: `${c.base}/api/v1/request`,
    method: 'POST',
    body: requestBody(ctx.target.jsonUrl),
    headers: { 'Content-Type': 'application/json' },
    connections: 50,
    timeoutS: 30,
  };
  await wrk({ ...o, durationS: ctx.warmS });
  const pids = c.pids();
  for (const pid of pids) await waitForIdleProcess(pid, 30_000);
  const watch = new RssGroupWatch(pids);
  const named: Record<string, number> = Object.fromEntries(pids.map((pid, i) => [`rota${i}`, pid]));
  if (c.redisPid !== null) named.redis = c.redisPid;
  const cpu = new CpuSplit(named);
  const w = await wrk({ ...o, durationS: ctx.loadS });
  const per = cpu.stop(w.requests).perCallUs;
  const rota = Object.entries(per)
    .filter(([k]) => k.startsWith('rota'))
    .reduce((a, [, v]) => a + (v ?? Number.NaN), 0);
  return { w, peaksMb: watch.stop().map((b) => b / MB), cpuUs: { rota, redis: per.redis ?? null } };
}

async function measureShape(
  ctx: Ctx,
  s: Shape,
  template: string,
  notes: string[],
): Promise<Outcome<ShapeFigures>> {
  const ports = ctx.squid?.ports ?? [];
  try {
    const value = await measuredTree({ ctx, label: `10. ${s.title}`, notes }, async () => {
      const c = await startCluster(ctx, s, template, ports);
      try {
        return await loadOnce(ctx, c);
      } finally {
        await c.stop();
      }
    });
    return { ok: true, value };
  } catch (e) {
    ctx.log(`  shared ${s.key} failed: ${(e as Error).stack ?? e}`);
    return { ok: false, reason: failedCell(e).failed };
  }
}

async function propagation(ctx: Ctx, template: string) {
  const ports = ctx.squid?.ports ?? [];
  const s = { ...SHAPES.find((x) => x.key === 'shared-3x1')!, key: 'propagation' };
  try {
    const c = await startCluster(ctx, s, template, ports);
    try {
      return { ok: true as const, value: await measurePropagation(ctx, c, ports, CHANGES) };
    } finally {
      await c.stop();
    }
  } catch (e) {
    ctx.log(`  shared propagation failed: ${(e as Error).stack ?? e}`);
    return { ok: false as const, reason: failedCell(e).failed };
  }
}

export async function runShared(ctx: Ctx): Promise<WorkloadOutput> {
  const notes: string[] = [];
  const results = new Map<string, Outcome<ShapeFigures>>();
  if (!ctx.squid) return sharedOutput(ctx, results, { ok: false, reason: `squid: ${ctx.squidError}` }, notes);
  let template: string;
  try {
    template = await poolTemplate(ctx, ctx.squid.ports);
  } catch (e) {
    return sharedOutput(ctx, results, { ok: false, reason: failedCell(e).failed }, notes);
  }
  for (const s of SHAPES) {
    ctx.log(`  shared: ${s.title} (50 connections through nginx, ${ctx.loadS} s)`);
    results.set(s.key, await measureShape(ctx, s, template, notes));
  }
  ctx.log(`  shared: propagation, ${CHANGES} changes of each kind under load`);
  return sharedOutput(ctx, results, await propagation(ctx, template), notes);
}
