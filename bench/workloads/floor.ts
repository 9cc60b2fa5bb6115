import { join } from 'node:path';
import type { Ctx } from '../lib/context.ts';
import { CpuSplit } from '../lib/cpu.ts';
import { canConnect, freePort, type Proc, sleep, startProcess } from '../lib/proc.ts';
import { probe } from '../lib/proxywhirl.ts';
import { fmt, type WorkloadOutput } from '../lib/report.ts';
import { addProxies, ROOT, requestBody, startRota } from '../lib/rota.ts';
import { MB, RssWatch, waitForIdleProcess } from '../lib/rss.ts';
import { type WrkResult, wrk } from '../lib/wrk.ts';
import { goodput } from './compare-rows.ts';

/**
 * Workload 7, the stack floor: how far a Node.js gateway on Rota's stack can get at all on this machine,
 * next to Rota, in one run. bench/reference/relay.ts does only what every gateway must (parse the body,
 * one undici Pool per proxy, JSON answer); Rota does everything else too.
 *
 *   wrk ──▶ squid ──▶ target                              (direct, before and after)
 *   wrk ──▶ relay | Rota ──▶ squid (10 ports) ──▶ target
 *
 * Figures go to the run notes, not the table: the relay is a yardstick, not a peer.
 */
interface Figures {
  readonly wrk: WrkResult;
  readonly peakMb: number;
  /** CPU per call of the gateway, squid and the target (the harness process), and the machine's idle %. */
  readonly cpu: ReturnType<CpuSplit['stop']>;
}

/** The processes whose CPU is split per call: squid, and the target (it runs in this process). */
function split(ctx: Ctx, gatewayPid?: number): CpuSplit {
  const pids: Record<string, number> = { squid: ctx.squid?.proc.pid ?? -1, target: process.pid };
  if (gatewayPid !== undefined) pids.gateway = gatewayPid;
  return new CpuSplit(pids);
}

async function measureGateway(ctx: Ctx, base: string, pid: number, targetUrl: string): Promise<Figures> {
  const opts = {
    url: `${base}/api/v1/request`,
    method: 'POST',
    body: requestBody(targetUrl),
    headers: { 'Content-Type': 'application/json' },
    connections: 50,
    timeoutS: 30,
  };
  await wrk({ ...opts, durationS: ctx.warmS });
  await waitForIdleProcess(pid, 60_000);
  const watch = new RssWatch(pid);
  const cpu = split(ctx, pid);
  const result = await wrk({ ...opts, durationS: ctx.loadS });
  const figures = cpu.stop(result.requests);
  const peak = watch.stop();
  return { wrk: result, peakMb: peak / MB, cpu: figures };
}

/** A reference script from bench/reference (`relay`, `fastify-relay`) on a free port. */
async function startReference(
  ctx: Ctx,
  name: string,
  ports: readonly number[],
): Promise<{ proc: Proc; base: string }> {
  const port = await freePort();
  const proc = startProcess(
    name,
    process.execPath,
    [join(ROOT, 'bench', 'reference', `${name}.ts`), String(port), ports.join(',')],
    { logPath: join(ctx.workDir, 'logs', `${name}.log`) },
  );
  const deadline = Date.now() + 15_000;
  while (!(await canConnect(port))) {
    if (proc.hasExited() || Date.now() > deadline)
      throw new Error(`${name} did not start: see ${proc.logPath}`);
    await sleep(20);
  }
  return { proc, base: `http://127.0.0.1:${port}` };
}

/** Starts a reference, measures it under the workload, stops it. */
async function measureReference(ctx: Ctx, name: string, targetUrl: string): Promise<Figures> {
  const ref = await startReference(ctx, name, ctx.squid?.ports ?? []);
  try {
    return await measureGateway(ctx, ref.base, ref.proc.pid, targetUrl);
  } finally {
    await ref.proc.stop();
  }
}

const us = (v: number | null | undefined) => (v == null ? 'n/a' : `${fmt(v, 0)} µs`);

/** Per call: each process's CPU, and how much of the machine stayed idle. */
function cpuText(c: Figures['cpu']): string {
  const parts = Object.entries(c.perCallUs).map(([name, v]) => `${name} ${us(v)}`);
  return `CPU per call ${parts.join(', ')}; machine idle ${fmt(c.idlePct, 0)}%`;
}

/** `1.18×`: one figure's gateway CPU per call over another's. */
function ratio(a: Figures, b: Figures): string {
  const x = a.cpu.perCallUs.gateway;
  const y = b.cpu.perCallUs.gateway;
  return x == null || y == null || y === 0 ? 'n/a' : `${fmt(x / y, 2)}×`;
}

function line(name: string, f: Figures, direct: number): string {
  const rps = goodput(f.wrk);
  return (
    `${name}: ${fmt(rps, 0)} successful req/s = ${fmt((100 * rps) / direct, 1)}% of the direct path, ` +
    `p50 ${fmt(f.wrk.p50Ms, 2)} ms, peak RSS ${fmt(f.peakMb, 1)} MB; ${cpuText(f.cpu)}`
  );
}

export async function runFloor(ctx: Ctx): Promise<WorkloadOutput> {
  const W = '7. Stack floor (small JSON, 50 conns)';
  if (!ctx.squid) return { rows: [], targets: [], notes: [`${W}: squid: ${ctx.squidError}`] };
  const ports = ctx.squid.ports;
  const targetUrl = ctx.target.jsonUrl;
  const direct = async () => {
    const cpu = split(ctx);
    const result = await wrk({
      url: `http://127.0.0.1:${ports[0]}/`,
      path: targetUrl,
      connections: 50,
      durationS: ctx.loadS,
      timeoutS: 30,
    });
    return { ...result, cpu: cpu.stop(result.requests) };
  };
  ctx.log('  stack floor: direct, relay, Fastify relay, Rota, direct');
  await wrk({ url: `http://127.0.0.1:${ports[0]}/`, path: targetUrl, connections: 50, durationS: ctx.warmS });
  const before = await direct();
  const relayFigures = await measureReference(ctx, 'relay', targetUrl);
  const fastifyFigures = await measureReference(ctx, 'fastify-relay', targetUrl);
  const rota = await startRota({ name: 'floor', workDir: ctx.workDir, nodeFlags: ctx.rotaNodeFlags });
  let rotaFigures: Figures;
  try {
    await addProxies(
      rota.base,
      ports.map((p) => ({ url: `http://127.0.0.1:${p}` })),
    );
    await probe(rota.base, targetUrl);
    rotaFigures = await measureGateway(ctx, rota.base, rota.proc.pid, targetUrl);
  } finally {
    await rota.stop();
  }
  const after = await direct();
  const directRps = (goodput(before) + goodput(after)) / 2;
  return {
    rows: [],
    targets: [],
    notes: [
      `${W}, direct path before / after: ${fmt(goodput(before), 0)} / ${fmt(goodput(after), 0)} successful req/s; ` +
        `before: ${cpuText(before.cpu)}; after: ${cpuText(after.cpu)}.`,
      `${W}, ${line('minimal relay (bench/reference/relay.ts)', relayFigures, directRps)}.`,
      `${W}, ${line("the same relay on Rota's HTTP stack (bench/reference/fastify-relay.ts: Fastify, request id, security headers, CORS, rate limit, validated body, one log line)", fastifyFigures, directRps)}.`,
      `${W}, ${line('Rota', rotaFigures, directRps)}.`,
      `${W}, gateway CPU per call against the minimal relay: the Fastify relay ${ratio(fastifyFigures, relayFigures)}, Rota ${ratio(rotaFigures, relayFigures)}.`,
    ],
  };
}
