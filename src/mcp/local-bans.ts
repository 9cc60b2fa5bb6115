import { RotaError } from '../errors/rota-error.ts';
import type { Services } from '../services.ts';
import type { BanReport, Json } from './backend.ts';

/**
 * A ban reported by an agent, in-process: what POST bans does (http/routes/bans.ts), through the same
 * BanJudge.report (the cool-down table, its doubling and bounds, every instance told). Answers as that
 * route does.
 */
export function reportBan(s: Services, b: BanReport): Json {
  if (!s.pool.get(b.proxy_id)) {
    throw new RotaError('PROXY_NOT_FOUND', 'Proxy not found', { details: { proxy_id: b.proxy_id } });
  }
  const e = s.bans.report(b.proxy_id, b.host.toLowerCase(), b.cooldown_s);
  return { proxy_id: b.proxy_id, host: e.host, until: new Date(e.until).toISOString(), count: e.count };
}
