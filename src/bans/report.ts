import { RotaError } from '../errors/rota-error.ts';
import type { Cooldown } from './cooldowns.ts';
import type { BanJudge } from './judge.ts';

/** A ban a client reports (POST bans, MCP's bans tool), as both answer it. */
export interface ReportedBan {
  readonly proxy_id: string;
  readonly host: string;
  readonly until: string;
  readonly count: number;
}

/**
 * A ban a client saw where Rota could not (inside a tunnel): 404 PROXY_NOT_FOUND for a proxy not in the
 * pool, else the pair cools down through BanJudge.report (the one table, its doubling and bounds).
 */
export function reportBan(
  d: { readonly bans: BanJudge; readonly known: (id: string) => boolean },
  b: { readonly proxy_id: string; readonly host: string; readonly cooldown_s?: number | undefined },
): ReportedBan {
  if (!d.known(b.proxy_id)) {
    throw new RotaError('PROXY_NOT_FOUND', 'Proxy not found', { details: { proxy_id: b.proxy_id } });
  }
  const e = d.bans.report(b.proxy_id, b.host.toLowerCase(), b.cooldown_s);
  return { proxy_id: b.proxy_id, host: e.host, until: new Date(e.until).toISOString(), count: e.count };
}

/** One active cool-down as GET bans and MCP's bans tool list it (a gateway exit's digest when it is one). */
export function cooldownView(c: Cooldown): ReportedBan & { exit?: string } {
  const view = { proxy_id: c.proxyId, host: c.host, until: new Date(c.until).toISOString(), count: c.count };
  return c.exit === undefined ? view : { ...view, exit: c.exit };
}
