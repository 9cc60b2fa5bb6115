import type { Ctx } from '../lib/context.ts';
import { foreignNote } from '../lib/cpu.ts';
import { startBlackholes } from '../lib/fixtures.ts';
import { sleep } from '../lib/proc.ts';
import { type Cell, check, failedCell, type Row, type WorkloadOutput } from '../lib/report.ts';
import { addProxies, api, type Rota, requestBody, scrape, startRota, sumMetric } from '../lib/rota.ts';
import { MB, RssWatch } from '../lib/rss.ts';
import { type WrkResult, wrk } from '../lib/wrk.ts';

const W = '4. Failover (5 of 10 proxies dead, 50 conns)';
/** The window: breakers should have cut the dead proxies out once the first 5 s are over. */
const SETTLE_S = 5;

interface Counters {
  readonly attempts: number;
  readonly calls: number;
  readonly successes: number;
}

async function counters(base: string): Promise<Counters> {
  const text = await scrape(base);
  return {
    attempts: sumMetric(text, 'rota_upstream_attempts_total'),
    calls: sumMetric(text, 'rota_requests_proxied_total'),
    successes: sumMetric(text, 'rota_requests_proxied_total', { name: 'outcome', value: 'success' }),
  };
}

function failedRows(reason: string): WorkloadOutput {
  const f = { failed: reason };
  const metrics = ['success rate, %', 'p99 latency, ms', 'upstream attempts per call after 5 s'];
  return {
    rows: metrics.map((metric) => ({ workload: W, metric, decimals: 0, rota: f })),
    targets: [
      check('Failover success 100%', f, () => false, String),
      check('Failover < 1.2 upstream attempts per call once breakers are open', f, () => false, String),
    ],
    notes: [],
  };
}

/**
 * Five live proxies (squid ports) interleaved with five that accept the connection and never answer,
 * under the default deadline (ROTA_TIMEOUT=30, ROTA_MAX_RETRIES=3) and breaker settings. The attempt
 * counters are read from /metrics at 5 s and again just before wrk stops (so that the calls wrk abandons
 * at the end do not count as failures of Rota's).
 */
export async function runFailover(ctx: Ctx): Promise<WorkloadOutput> {
  if (!ctx.squid) return failedRows(`squid: ${ctx.squidError}`);
  const durationS = Math.max(ctx.loadS, 12);
  const holes = await startBlackholes(5);
  const live = ctx.squid.ports.slice(0, 5);
  const proxies = live.flatMap((p, i) => [
    { url: `http://127.0.0.1:${p}` },
    { url: `http://127.0.0.1:${holes.ports[i]}` },
  ]);
  let rota: Rota | null = null;
  try {
    rota = await startRota({ name: 'failover', workDir: ctx.workDir, nodeFlags: ctx.rotaNodeFlags });
    await addProxies(rota.base, proxies);
    ctx.log(`  failover: Rota, 5 live + 5 dead proxies (50 connections, ${durationS} s)`);
    return output(await measure(ctx, rota, durationS), holes.accepted());
  } catch (e) {
    return failedRows(failedCell(e).failed);
  } finally {
    await rota?.stop();
    await holes.close();
  }
}

interface Measurement {
  readonly w: WrkResult;
  readonly c0: Counters;
  readonly c1: Counters;
  readonly peakMb: number;
  readonly open: number | undefined;
}

async function measure(ctx: Ctx, rota: Rota, durationS: number): Promise<Measurement> {
  const watch = new RssWatch(rota.proc.pid);
  const run = wrk({
    url: `${rota.base}/api/v1/request`,
    method: 'POST',
    body: requestBody(ctx.target.jsonUrl),
    headers: { 'Content-Type': 'application/json' },
    connections: 50,
    durationS,
    timeoutS: 60,
  });
  await sleep(SETTLE_S * 1000);
  const c0 = await counters(rota.base);
  await sleep((durationS - SETTLE_S - 0.5) * 1000);
  const c1 = await counters(rota.base);
  const w = await run;
  const peakMb = watch.stop() / MB;
  const status = await api(rota.base, 'GET', '/api/v1/status');
  const open = (status.json as { pool_stats?: { failed?: number } }).pool_stats?.failed;
  return { w, c0, c1, peakMb, open };
}

function output(m: Measurement, reachedDead: number): WorkloadOutput {
  const { w, c0, c1 } = m;
  const calls = c1.calls - c0.calls;
  const perCall: Cell =
    calls > 0 ? (c1.attempts - c0.attempts) / calls : { failed: 'no call completed after 5 s' };
  const answered = w.requests + w.errors.timeout;
  const success = answered > 0 ? (100 * (w.requests - w.errors.status)) / answered : 0;
  const r = (metric: string, decimals: number, rota: Cell): Row => ({ workload: W, metric, decimals, rota });
  return {
    rows: [
      r('success rate, % (wrk)', 2, success),
      r('successful req/s', 0, (w.requests - w.errors.status) / w.durationS),
      r('p50 latency, ms', 2, w.p50Ms),
      r('p99 latency, ms', 1, w.p99Ms),
      r('upstream attempts per call after 5 s', 3, perCall),
      r('calls failed after 5 s (Rota metrics)', 0, calls - (c1.successes - c0.successes)),
      r('breakers open at the end', 0, m.open ?? { failed: 'no status' }),
      r('peak RSS, MB', 1, m.peakMb),
    ],
    targets: [
      check(
        'Failover success 100%',
        success,
        (v) => v >= 100,
        (v) => `${v.toFixed(2)}%`,
      ),
      check(
        'Failover < 1.2 upstream attempts per call once breakers are open',
        perCall,
        (v) => v < 1.2,
        (v) => `${v.toFixed(3)} attempts/call (from 5 s to the end)`,
      ),
    ],
    notes: [
      `4. Failover: ${w.requests} answers in ${w.durationS.toFixed(1)} s, ${w.errors.status} with status ≥ 400, ` +
        `${w.errors.timeout} wrk timeouts (60 s); ${reachedDead} connections reached the dead proxies. ` +
        'Calls still in flight when wrk stopped are in neither count.',
      ...foreignNote('4. Failover', w.foreignCpu),
    ],
  };
}
