import type { Ctx } from '../lib/context.ts';
import { type Cell, check, failedCell, type Row, type WorkloadOutput } from '../lib/report.ts';
import { addProxies, api, type ProxyToAdd, type Rota, startRota } from '../lib/rota.ts';

const COUNT = 1000;
const W = `6. Health-check fan-out (${COUNT.toLocaleString('en-US')} proxies)`;

interface Sweep {
  readonly seconds: number;
  readonly working: number;
}

/** One POST proxies/health-check over the whole pool, timed from the client. */
async function sweep(rota: Rota): Promise<Sweep> {
  const t0 = performance.now();
  const r = await api(rota.base, 'POST', '/api/v1/proxies/health-check', {});
  const seconds = (performance.now() - t0) / 1000;
  if (r.status !== 200)
    throw new Error(`health-check answered ${r.status}: ${JSON.stringify(r.json).slice(0, 200)}`);
  const results = (r.json as { data?: Array<{ status: string }> }).data ?? [];
  if (results.length !== COUNT)
    throw new Error(`health-check returned ${results.length} results, not ${COUNT}`);
  return { seconds, working: results.filter((x) => x.status === 'working').length };
}

/**
 * 1,000 distinct proxies, all real: the squid ports, each under 100 usernames (squid has no auth
 * configured and ignores the credentials; Rota sees 1,000 proxies, distinct by URL + username). Each
 * check is a GET of the target's small JSON through one proxy. The first sweep opens every connection;
 * the repeat shows the warm figure.
 */
async function atConcurrency(ctx: Ctx, concurrency: number, proxies: readonly ProxyToAdd[]) {
  let rota: Rota | null = null;
  try {
    rota = await startRota({
      name: `health-${concurrency}`,
      workDir: ctx.workDir,
      nodeFlags: ctx.rotaNodeFlags,
      env: {
        ROTA_HEALTH_CHECK_CONCURRENCY: String(concurrency),
        ROTA_HEALTH_CHECK_URL: ctx.target.jsonUrl,
      },
    });
    await addProxies(rota.base, proxies);
    ctx.log(`  health checks: ${COUNT} proxies at concurrency ${concurrency}`);
    const first = await sweep(rota);
    const again = await sweep(rota);
    return { first, again };
  } finally {
    await rota?.stop();
  }
}

export async function runHealth(ctx: Ctx): Promise<WorkloadOutput> {
  const rows: Row[] = [];
  const notes: string[] = [];
  let at200: Cell = { failed: 'not run' };
  const ports = ctx.squid?.ports ?? [];
  const proxies: ProxyToAdd[] = Array.from({ length: COUNT }, (_, i) => ({
    url: `http://127.0.0.1:${ports[i % Math.max(1, ports.length)]}`,
    username: `hc-${i}`,
    password: `pw-${i}`,
  }));
  for (const concurrency of [50, 200]) {
    let first: Cell;
    let again: Cell;
    let working: Cell;
    if (!ctx.squid) {
      first = again = working = { failed: `squid: ${ctx.squidError}` };
    } else {
      try {
        const r = await atConcurrency(ctx, concurrency, proxies);
        first = r.first.seconds;
        again = r.again.seconds;
        working = r.first.working;
        if (r.first.working !== COUNT || r.again.working !== COUNT) {
          notes.push(
            `6. Health checks at ${concurrency}: ${r.first.working} then ${r.again.working} of ${COUNT} ` +
              'reported working; every fixture proxy is live, so the rest are failures of the check.',
          );
        }
      } catch (e) {
        first = again = working = failedCell(e);
      }
    }
    if (concurrency === 200) at200 = first;
    rows.push(
      { workload: W, metric: `concurrency ${concurrency}: wall time, s`, decimals: 2, rota: first },
      { workload: W, metric: `concurrency ${concurrency}: repeat, s`, decimals: 2, rota: again },
      { workload: W, metric: `concurrency ${concurrency}: working`, decimals: 0, rota: working },
    );
  }
  return {
    rows,
    targets: [
      check(
        '1,000 health checks at concurrency 200 < 5 s',
        at200,
        (v) => v < 5,
        (v) => `${v.toFixed(2)} s`,
      ),
    ],
    notes,
  };
}
