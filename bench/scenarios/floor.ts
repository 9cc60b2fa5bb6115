import { subjectCpu as cpuOf, forwardOptions, measureWrk, postOptions } from '../lib/measure.ts';
import { startReference } from '../lib/refs.ts';
import { type Ctx, type ScenarioResult, versus } from '../lib/report.ts';
import { startRotaWithPool } from '../lib/rota.ts';
import { goodput, pooled } from '../lib/wrk.ts';

/**
 * The relay floor: bench/reference/relay.ts and fastify-relay.ts (BENCHMARKS.md, "Method") next to Rota,
 * `POST request` at 50 connections, between two direct runs. The figure that matters is each gateway's own
 * CPU per call: on 2 shared cores req/s moves with everything else on the machine, CPU per call much less.
 */
async function gateway(ctx: Ctx, g: { base: string; pid: number; stop(): Promise<void> }) {
  try {
    return await measureWrk(ctx, { ...postOptions(g.base, ctx.target.jsonUrl), connections: 50 }, g.pid);
  } finally {
    await g.stop();
  }
}
const reference = async (ctx: Ctx, name: string) =>
  gateway(ctx, await startReference(ctx.workDir, name, ctx.squid.ports));

export async function floor(ctx: Ctx): Promise<ScenarioResult> {
  const url = ctx.target.jsonUrl;
  const direct = () =>
    measureWrk(ctx, { ...forwardOptions(ctx.squid.ports[0]!, url), connections: 50 }, null);
  ctx.log('  relay floor: direct, relay, Fastify relay, Rota, direct');
  const before = await direct();
  const relay = await reference(ctx, 'relay');
  const fastify = await reference(ctx, 'fastify-relay');
  const o = { name: 'floor', workDir: ctx.workDir, nodeFlags: ctx.rotaFlags };
  const rota = await startRotaWithPool(o, ctx.squid.ports, url);
  const mine = await gateway(ctx, { ...rota, pid: rota.proc.pid });
  const after = await direct();
  const S = 'Relay floor';
  const directRps = goodput(pooled(before.load, after.load));
  return {
    rows: [
      versus(S, 'gateway CPU µs per call', cpuOf(mine), 'relay', cpuOf(relay), { max: 1.15 }),
      versus(S, 'gateway CPU µs per call', cpuOf(mine), 'Fastify relay', cpuOf(fastify)),
      versus(S, 'req/s, 50 conns', goodput(mine.load), 'relay', goodput(relay.load)),
      versus(S, 'req/s, 50 conns', goodput(mine.load), 'direct', directRps),
    ],
    raw: { before, relay, fastify, rota: mine, after },
  };
}
