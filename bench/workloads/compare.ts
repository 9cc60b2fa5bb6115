import type { Ctx } from '../lib/context.ts';
import { PROXYWHIRL_VERSION, probe, startProxywhirl } from '../lib/proxywhirl.ts';
import { check, failedCell, fmt, type Row, type WorkloadOutput } from '../lib/report.ts';
import { addProxies, requestBody, startRota } from '../lib/rota.ts';
import { MB, RssWatch, waitForIdleProcess } from '../lib/rss.ts';
import { type WrkOptions, type WrkResult, wrk } from '../lib/wrk.ts';
import {
  comparisonRows,
  goodput,
  type Measured,
  PHASE_TITLES,
  type PhaseKey,
  pooled,
  type SubjectName,
} from './compare-rows.ts';

/**
 * Workloads 1-3 side by side: the direct path (wrk straight through squid: the limit), proxywhirl and
 * Rota, each alone on the machine while it is measured, each with the same warm-up first.
 *
 *   wrk ──▶ squid ──▶ target                      (direct)
 *   wrk ──▶ gateway ──▶ squid (10 ports) ──▶ target  (proxywhirl, Rota)
 */
interface Subject {
  readonly name: SubjectName;
  readonly pid: number | null;
  readonly options: (targetUrl: string) => Pick<WrkOptions, 'url' | 'method' | 'path' | 'body' | 'headers'>;
}

interface Phase {
  readonly key: PhaseKey;
  readonly connections: number;
  readonly big: boolean;
}

const PHASES: readonly Phase[] = [
  { key: 'throughput', connections: 50, big: false },
  { key: 'latency', connections: 1, big: false },
  { key: 'big', connections: 10, big: true },
];

function gatewaySubject(
  name: SubjectName,
  base: string,
  pid: number,
  headers: Record<string, string> = {},
): Subject {
  return {
    name,
    pid,
    options: (targetUrl) => ({
      url: `${base}/api/v1/request`,
      method: 'POST',
      body: requestBody(targetUrl),
      headers: { 'Content-Type': 'application/json', ...headers },
    }),
  };
}

async function measure(ctx: Ctx, s: Subject, phase: Phase): Promise<Measured> {
  const targetUrl = phase.big ? ctx.target.bigUrl : ctx.target.jsonUrl;
  const base = { ...s.options(targetUrl), connections: phase.connections, timeoutS: 30 };
  ctx.log(`  ${phase.key}: ${s.name} (${phase.connections} connections, ${ctx.loadS} s)`);
  await wrk({ ...base, durationS: ctx.warmS });
  if (s.pid !== null) await waitForIdleProcess(s.pid, 60_000);
  const watch = s.pid === null ? null : new RssWatch(s.pid);
  let result: WrkResult;
  try {
    result = await wrk({ ...base, durationS: ctx.loadS });
  } catch (e) {
    watch?.stop();
    throw e;
  }
  const peak = watch?.stop() ?? null;
  return {
    ok: true,
    wrk: result,
    peakRssMb: peak === null ? null : peak / MB,
    baseRssMb: watch === null ? null : watch.before / MB,
  };
}

async function startGateways(
  ctx: Ctx,
  subjects: Map<SubjectName, Subject | Error>,
  phase: PhaseKey,
  proxywhirlError: string | null,
): Promise<() => Promise<void>> {
  const ports = ctx.squid?.ports ?? [];
  const proxies = ports.map((p) => ({ url: `http://127.0.0.1:${p}` }));
  const stops: Array<() => Promise<void>> = [];
  try {
    const rota = await startRota({
      name: `compare-${phase}`,
      workDir: ctx.workDir,
      nodeFlags: ctx.rotaNodeFlags,
    });
    stops.push(rota.stop);
    await addProxies(rota.base, proxies);
    await probe(rota.base, ctx.target.jsonUrl);
    subjects.set('rota', gatewaySubject('rota', rota.base, rota.proc.pid));
  } catch (e) {
    ctx.log(`  Rota could not be set up: ${(e as Error).message}`);
    subjects.set('rota', e as Error);
  }
  if (proxywhirlError) {
    subjects.set('proxywhirl', new Error(proxywhirlError));
    return stopAllOf(stops);
  }
  try {
    const pw = await startProxywhirl(ctx.workDir, proxies);
    stops.push(pw.stop);
    await probe(pw.base, ctx.target.jsonUrl, pw.headers);
    subjects.set('proxywhirl', gatewaySubject('proxywhirl', pw.base, pw.proc.pid, { ...pw.headers }));
  } catch (e) {
    ctx.log(`  proxywhirl ${PROXYWHIRL_VERSION} could not be set up: ${(e as Error).message}`);
    subjects.set('proxywhirl', e as Error);
  }
  return stopAllOf(stops);
}

function stopAllOf(stops: Array<() => Promise<void>>): () => Promise<void> {
  return async () => {
    await Promise.all(stops.map((s) => s()));
  };
}

async function measureOne(ctx: Ctx, s: Subject | Error | undefined, phase: Phase): Promise<Measured> {
  if (s === undefined || s instanceof Error) return { ok: false, reason: failedCell(s).failed };
  try {
    return await measure(ctx, s, phase);
  } catch (e) {
    return { ok: false, reason: failedCell(e).failed };
  }
}

/**
 * Figures vary from run to run on this VM, so the direct path is measured just before and just after
 * Rota and the two runs are pooled: the ratio compares runs made under the same conditions. proxywhirl,
 * ~300× slower, goes last.
 */
async function measurePhase(
  ctx: Ctx,
  phase: Phase,
  subjects: Map<SubjectName, Subject | Error>,
  notes: string[],
): Promise<Map<SubjectName, Measured>> {
  const before = await measureOne(ctx, subjects.get('direct'), phase);
  const rota = await measureOne(ctx, subjects.get('rota'), phase);
  const after = await measureOne(ctx, subjects.get('direct'), phase);
  const proxywhirl = await measureOne(ctx, subjects.get('proxywhirl'), phase);
  let direct: Measured = before;
  if (before.ok && after.ok) {
    direct = { ok: true, wrk: pooled(before.wrk, after.wrk), peakRssMb: null, baseRssMb: null };
    notes.push(
      `${PHASE_TITLES[phase.key]}, direct path before / after Rota: ${fmt(goodput(before.wrk), 0)} / ` +
        `${fmt(goodput(after.wrk), 0)} successful req/s, p50 ${fmt(before.wrk.p50Ms, 3)} / ` +
        `${fmt(after.wrk.p50Ms, 3)} ms (the table pools both).`,
    );
  } else if (!before.ok) direct = after;
  return new Map([
    ['direct', direct],
    ['rota', rota],
    ['proxywhirl', proxywhirl],
  ]);
}

export async function runCompare(ctx: Ctx, proxywhirlError: string | null): Promise<WorkloadOutput> {
  const results = new Map<string, Measured>();
  const key = (p: PhaseKey, s: SubjectName) => `${p}/${s}`;
  const subjects = new Map<SubjectName, Subject | Error>();
  if (!ctx.squid) {
    for (const p of PHASES)
      for (const s of ['direct', 'proxywhirl', 'rota'] as const)
        results.set(key(p.key, s), { ok: false, reason: `squid: ${ctx.squidError}` });
    return finish(results, []);
  }
  const squidPort = ctx.squid.ports[0]!;
  subjects.set('direct', {
    name: 'direct',
    pid: null,
    options: (targetUrl) => ({ url: `http://127.0.0.1:${squidPort}/`, method: 'GET', path: targetUrl }),
  });
  const notes: string[] = [];
  // Fresh gateways for every phase: a peak RSS must not carry what the previous phase left behind.
  for (const phase of PHASES) {
    const stop = await startGateways(ctx, subjects, phase.key, proxywhirlError);
    try {
      const measured = await measurePhase(ctx, phase, subjects, notes);
      for (const [name, m] of measured) results.set(key(phase.key, name), m);
    } finally {
      await stop();
    }
  }
  return finish(results, notes);
}

function finish(results: Map<string, Measured>, notes: string[]): WorkloadOutput {
  const get = (p: PhaseKey, s: SubjectName) => results.get(`${p}/${s}`) ?? { ok: false, reason: 'not run' };
  const { rows, notes: more } = comparisonRows(get);
  return { rows, targets: targets(rows), notes: [...notes, ...more] };
}

function find(rows: readonly Row[], workload: string, metric: string): Row | undefined {
  return rows.find((r) => r.workload.startsWith(workload) && r.metric === metric);
}

function targets(rows: readonly Row[]) {
  const tput = find(rows, '1.', 'successful req/s');
  const ratioTo = (other: 'direct' | 'proxywhirl') => {
    const a = tput?.rota;
    const b = tput?.[other];
    if (typeof a !== 'number') return a;
    if (typeof b !== 'number') return b;
    return b > 0 ? a / b : { failed: `${other} completed no request` };
  };
  const added = find(rows, '2.', 'added p50 vs direct, ms')?.rota;
  const rssRows = rows.filter((r) => r.metric === 'peak RSS, MB').map((r) => r.rota);
  const rss = rssRows.some((c) => typeof c !== 'number')
    ? rssRows.find((c) => typeof c !== 'number')
    : Math.max(...(rssRows as number[]));
  return [
    check(
      'Throughput ≥ 10× proxywhirl',
      ratioTo('proxywhirl'),
      (v) => v >= 10,
      (v) => `${v.toFixed(1)}×`,
    ),
    check(
      'Throughput ≥ 50% of the direct path',
      ratioTo('direct'),
      (v) => v >= 0.5,
      (v) => `${(v * 100).toFixed(1)}%`,
    ),
    check(
      'Added p50 latency < 0.5 ms',
      added,
      (v) => v < 0.5,
      (v) => `${v.toFixed(3)} ms`,
    ),
    check(
      'RSS under load < 150 MB (workloads 1-3)',
      rss,
      (v) => v < 150,
      (v) => `${v.toFixed(1)} MB peak`,
    ),
  ];
}
