import { startBlackholes } from '../lib/fixtures.ts';
import { postOptions, rssWatch } from '../lib/measure.ts';
import { sleep } from '../lib/proc.ts';
import { alone, type Ctx, type ScenarioResult } from '../lib/report.ts';
import { api, metric, startRotaWithPool } from '../lib/rota.ts';
import { goodput, wrk } from '../lib/wrk.ts';

/**
 * Failover: 5 live proxies (squid ports) interleaved with 5 that accept the connection and never answer,
 * `POST request` at 50 connections, default deadline (ROTA_TIMEOUT=30, ROTA_MAX_RETRIES=3) and breaker
 * settings. Upstream attempts per call come from Rota's /metrics, read 5 s after the start (once the
 * breakers should have cut the dead proxies out) and just before wrk stops, so that the calls wrk
 * abandons at the end count for neither side.
 */
const SETTLE_S = 5;

async function counters(base: string) {
  return {
    attempts: await metric(base, 'rota_upstream_attempts_total'),
    calls: await metric(base, 'rota_requests_proxied_total'),
    successes: await metric(base, 'rota_requests_proxied_total', 'outcome="success"'),
  };
}

export async function failover(ctx: Ctx): Promise<ScenarioResult> {
  const durationS = Math.max(ctx.loadS, 12); // the breakers need a few seconds past SETTLE_S
  const holes = await startBlackholes(5);
  const proxies = ctx.squid.ports.slice(0, 5).flatMap((p, i) => [p, holes.ports[i]!]);
  const o = { name: 'failover', workDir: ctx.workDir, nodeFlags: ctx.rotaFlags };
  const rota = await startRotaWithPool(o, proxies);
  try {
    ctx.log(`  failover: 5 live + 5 dead proxies, 50 connections, ${durationS} s`);
    const peakRss = rssWatch(rota.proc.pid);
    const post = { ...postOptions(rota.base, ctx.target.jsonUrl), connections: 50 };
    const load = wrk({ ...post, durationS, timeoutS: 60 });
    await sleep(SETTLE_S * 1000);
    const c0 = await counters(rota.base);
    await sleep((durationS - SETTLE_S - 0.5) * 1000);
    const c1 = await counters(rota.base);
    const w = await load;
    const peakMb = peakRss();
    const status = await api(rota.base, 'GET', '/api/v1/status');
    const open = (status.json as { pool_stats?: { failed?: number } }).pool_stats?.failed ?? null;
    const calls = c1.calls - c0.calls;
    const perCall = calls > 0 ? (c1.attempts - c0.attempts) / calls : null;
    const answered = w.requests + w.errors.timeout;
    const success = answered > 0 ? (100 * (w.requests - w.errors.status)) / answered : null;
    const S = 'Failover';
    return {
      rows: [
        alone(S, 'success %, 5 of 10 proxies dead', success, { min: 100 }),
        alone(S, 'upstream attempts per call after 5 s', perCall, { max: 1.2 }),
        alone(S, 'req/s, 50 conns', goodput(w)),
        alone(S, 'p99 ms', w.p99Ms),
        alone(S, 'breakers open at the end', open),
      ],
      raw: { wrk: w, c0, c1, peakMb, breakersOpen: open, reachedDead: holes.accepted() },
    };
  } finally {
    await rota.stop();
    await holes.close();
  }
}
