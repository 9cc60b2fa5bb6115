import type { BanSite } from '../lib/ban-site.ts';
import type { Ctx } from '../lib/context.ts';
import { foreignNote } from '../lib/cpu.ts';
import {
  cooledIds,
  type DriveResult,
  driveUntilBanned,
  importProxies,
  startRotaNoListeners,
} from '../lib/pool-tools.ts';
import { sleep } from '../lib/proc.ts';
import { failedCell } from '../lib/report.ts';
import { api, type Rota } from '../lib/rota.ts';
import { waitForIdleProcess } from '../lib/rss.ts';
import type { EgressSquid } from '../lib/squid-egress.ts';
import { type WrkResult, wrk } from '../lib/wrk.ts';
import type { Outcome, SelectionFigures } from './bans-report.ts';

/**
 * Workload 9's second part: GET rotate?host= with a pool of 100,000 proxies (10,000 with --quick) of
 * which a tenth cool down for that host. There is no API to create a ban, so the cool-downs are made
 * the way a site makes them: the pool is 100,000 distinct proxies (one import; distinct usernames on the
 * ten squid ports), and POST request calls go to host C of the ban site, which answers 403 to everyone,
 * until GET bans counts the wanted number (each call bans up to ROTA_MAX_RETRIES = 3 proxies).
 */
async function rotateLatency(ctx: Ctx, base: string, path: string, notes: string[]): Promise<WrkResult> {
  const o = { url: `${base}${path}`, connections: 1, timeoutS: 10 };
  await wrk({ ...o, durationS: ctx.warmS });
  const r = await wrk({ ...o, durationS: Math.min(ctx.loadS, 10) });
  if (r.errors.status > 0) throw new Error(`GET ${path} answered ${r.errors.status} errors`);
  notes.push(...foreignNote(`9. GET ${path}`, r.foreignCpu));
  return r;
}

async function timedGet(base: string, path: string): Promise<{ ms: number; id: string }> {
  const t0 = performance.now();
  const r = await api(base, 'GET', path);
  const ms = performance.now() - t0;
  if (r.status !== 200) throw new Error(`GET ${path} answered ${r.status}`);
  return { ms, id: (r.json as { data: { id: string } }).data.id };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

async function setStrategy(base: string, name: string): Promise<void> {
  const r = await api(base, 'PUT', '/api/v1/config', { rotation_strategy: name });
  if (r.status !== 200) throw new Error(`PUT config answered ${r.status}`);
}

/**
 * The cool-downs were made by round-robin from the first member on, so they are one block at the head
 * of the pool's order. A fresh round-robin cursor (a strategy switch builds a new one) starts there, and
 * its first pick for the host steps over the whole block: that pick, timed from the harness, against
 * ordinary ones. Repeated 5 times (median).
 */
async function worstPick(base: string, host: string): Promise<{ worstMs: number; usualMs: number }> {
  const worst: number[] = [];
  for (let i = 0; i < 5; i++) {
    await setStrategy(base, 'random');
    await timedGet(base, '/api/v1/rotate');
    await setStrategy(base, 'round-robin');
    await timedGet(base, '/api/v1/rotate');
    worst.push((await timedGet(base, `/api/v1/rotate?host=${host}`)).ms);
  }
  const usual: number[] = [];
  for (let i = 0; i < 21; i++) usual.push((await timedGet(base, `/api/v1/rotate?host=${host}`)).ms);
  return { worstMs: median(worst), usualMs: median(usual) };
}

/** 50 picks for the host: how many were proxies cooling down for it (there should be none). */
async function cooledPicks(base: string, host: string): Promise<number> {
  const cooled = await cooledIds(base, host);
  let hits = 0;
  for (let i = 0; i < 50; i++)
    if (cooled.has((await timedGet(base, `/api/v1/rotate?host=${host}`)).id)) hits++;
  return hits;
}

async function importPool(base: string, squid: EgressSquid, n: number): Promise<number> {
  const lines = Array.from({ length: n }, (_, i) => {
    const p = squid.proxies[i % squid.proxies.length]!;
    return `127.0.0.1:${p.port}:bench-${i}:pw-${i}`;
  });
  const t0 = performance.now();
  const created = await importProxies(base, lines);
  if (created !== n) throw new Error(`import created ${created} of ${n} proxies`);
  return (performance.now() - t0) / 1000;
}

async function measureOn(
  ctx: Ctx,
  rota: Rota,
  squid: EgressSquid,
  site: BanSite,
  notes: string[],
): Promise<SelectionFigures> {
  const n = ctx.scaleProxies;
  const host = site.hostName.C;
  const importS = await importPool(rota.base, squid, n);
  const drive: DriveResult = await driveUntilBanned({
    base: rota.base,
    targetUrl: site.url('C', '/json'),
    host,
    want: n / 10,
    concurrency: 8,
    maxCalls: n,
    maxS: 300,
  });
  if (drive.cooled < n / 10)
    throw new Error(`only ${drive.cooled} cool-downs after ${drive.calls} calls in ${drive.seconds} s`);
  // The drive opened a connection to squid for each of its ~3 proxies per call; undici closes them after
  // 4 s idle. Selection is measured once they are gone and Rota is at rest again.
  await sleep(5_000);
  await waitForIdleProcess(rota.proc.pid, 30_000);
  const withHost = await rotateLatency(ctx, rota.base, `/api/v1/rotate?host=${host}`, notes);
  const plain = await rotateLatency(ctx, rota.base, '/api/v1/rotate', notes);
  const hits = await cooledPicks(rota.base, host);
  const picks = await worstPick(rota.base, host);
  return { pool: n, importS, drive, withHost, plain, cooledPicks: hits, ...picks };
}

export async function measureSelection(
  ctx: Ctx,
  squid: EgressSquid,
  site: BanSite,
  notes: string[],
): Promise<Outcome<SelectionFigures>> {
  let rota: Rota | null = null;
  try {
    rota = await startRotaNoListeners(ctx, 'bans-selection');
    return { ok: true, value: await measureOn(ctx, rota, squid, site, notes) };
  } catch (e) {
    ctx.log(`  bans selection failed: ${(e as Error).stack ?? e}`);
    return { ok: false, reason: failedCell(e).failed };
  } finally {
    await rota?.stop();
  }
}
