import http from 'node:http';
import { type BanSite, startBanSite } from '../lib/ban-site.ts';
import type { Ctx } from '../lib/context.ts';
import { banTotal, startRotaNoListeners } from '../lib/pool-tools.ts';
import { failedCell } from '../lib/report.ts';
import { addProxies, api, type Rota } from '../lib/rota.ts';
import { MB, RssWatch, waitForIdleProcess } from '../lib/rss.ts';
import { type EgressSquid, startEgressSquid } from '../lib/squid-egress.ts';
import { measuredTree } from '../lib/tree.ts';
import { wrkHosts } from '../lib/wrk-hosts.ts';
import { bansOutput, type LoadFigures, type Outcome } from './bans-report.ts';
import { measureSelection } from './bans-selection.ts';

/**
 * Workload 9, bans ("Smart rotation"): ten upstream proxies leaving from ten loopback addresses
 * (127.0.0.21-30, one squid with `tcp_outgoing_address` per port); a site bans three of them (403) on
 * host A (127.0.0.2) and none on host B (127.0.0.1). wrk drives POST request to both hosts at once; a
 * run without bans, before and after, is the yardstick for host B. Then the selection cost with a pool
 * of 100,000 proxies of which 10,000 cool down for one host (bans-selection.ts).
 */
export const EGRESS = Array.from({ length: 10 }, (_, i) => `127.0.0.${21 + i}`);
/** Banned on host A: three of the ten, spread over the round-robin order. */
export const BANNED = ['127.0.0.22', '127.0.0.25', '127.0.0.28'];
/** The window: cool-downs should be in place once the first 5 s are over. */
export const WINDOW_S = 5;

/** Through each squid port, asks the site which address the request came from. */
function whoami(port: number, url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request(
      { host: '127.0.0.1', port, path: url, headers: { host: u.host }, agent: false, timeout: 5_000 },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.once('end', () => resolve(text.trim()));
      },
    );
    req.once('error', reject);
    req.once('timeout', () => req.destroy(new Error('whoami timed out')));
    req.end();
  });
}

async function checkEgress(squid: EgressSquid, site: BanSite): Promise<void> {
  for (const p of squid.proxies) {
    const seen = await whoami(p.port, site.url('B', '/whoami'));
    if (seen !== p.egress) throw new Error(`squid port ${p.port} left from ${seen}, not ${p.egress}`);
  }
}

export function bodyFor(site: BanSite, host: 'A' | 'B' | 'C'): string {
  return JSON.stringify({ url: site.url(host, '/json'), method: 'GET' });
}

async function loadOnce(ctx: Ctx, squid: EgressSquid, site: BanSite, slug: string): Promise<LoadFigures> {
  const durationS = Math.max(ctx.loadS, 2 * WINDOW_S);
  let rota: Rota | null = null;
  try {
    site.resetCounts();
    rota = await startRotaNoListeners(ctx, `bans-${slug}`);
    await addProxies(
      rota.base,
      squid.proxies.map((p) => ({ url: `http://127.0.0.1:${p.port}` })),
    );
    const probe = await api(rota.base, 'POST', '/api/v1/request', JSON.parse(bodyFor(site, 'B')));
    if ((probe.json as { data?: { status_code?: number } }).data?.status_code !== 200)
      throw new Error(`probe through Rota answered ${probe.status}`);
    // Warm-up on host B only: host A's first bans must happen in the measured run.
    const warm = { base: rota.base, connections: 50, durationS: ctx.warmS, windowS: 0 };
    await wrkHosts({ ...warm, bodies: [bodyFor(site, 'B')] });
    await waitForIdleProcess(rota.proc.pid, 60_000);
    site.resetCounts();
    const watch = new RssWatch(rota.proc.pid);
    const w = await wrkHosts({
      base: rota.base,
      bodies: [bodyFor(site, 'A'), bodyFor(site, 'B')],
      connections: 50,
      durationS,
      windowS: WINDOW_S,
    });
    const peakMb = watch.stop() / MB;
    const cooledA = await banTotal(rota.base, site.hostName.A);
    return { w, peakMb, cooledA, siteCounts: new Map(site.counts()) };
  } finally {
    await rota?.stop();
  }
}

async function loadRun(
  ctx: Ctx,
  squid: EgressSquid,
  site: BanSite,
  [slug, label]: [string, string],
  notes: string[],
): Promise<Outcome<LoadFigures>> {
  try {
    const value = await measuredTree({ ctx, label: `9. Bans, ${label}`, notes }, () =>
      loadOnce(ctx, squid, site, slug),
    );
    return { ok: true, value };
  } catch (e) {
    ctx.log(`  bans ${label} failed: ${(e as Error).stack ?? e}`);
    return { ok: false, reason: failedCell(e).failed };
  }
}

export async function runBans(ctx: Ctx) {
  const notes: string[] = [];
  const site = await startBanSite(BANNED);
  let squid: EgressSquid | null = null;
  try {
    squid = await startEgressSquid(ctx.workDir, EGRESS);
    await checkEgress(squid, site);
    ctx.log('  bans: run without bans, with bans, without bans (50 connections, two hosts)');
    site.banned = new Set();
    const before = await loadRun(ctx, squid, site, ['before', 'no bans (before)'], notes);
    site.banned = new Set(BANNED);
    const bans = await loadRun(ctx, squid, site, ['banned', 'three proxies banned on host A'], notes);
    site.banned = new Set();
    const after = await loadRun(ctx, squid, site, ['after', 'no bans (after)'], notes);
    site.banned = new Set(BANNED);
    ctx.log(`  bans: selection with ${ctx.scaleProxies} proxies and ${ctx.scaleProxies / 10} cool-downs`);
    const selection = await measureSelection(ctx, squid, site, notes);
    return bansOutput(ctx, { before, bans, after, selection }, notes);
  } catch (e) {
    const reason = failedCell(e).failed;
    const failed = { ok: false as const, reason };
    return bansOutput(ctx, { before: failed, bans: failed, after: failed, selection: failed }, notes);
  } finally {
    await squid?.proc.stop();
    await site.close();
  }
}
