import { RotaError } from '../errors/rota-error.ts';
import type { Services } from '../services.ts';
import type { BanReport, Json } from './backend.ts';

/**
 * A ban reported by an agent, in-process: the proxy is kept off the host in the cool-down table, with the
 * ban policy's doubling and bounds (a given cooldown_s capped at max_cooldown_s), and other instances
 * hear of it as of any ban. Answers as GET bans lists the pair.
 */
export function reportBan(s: Services, b: BanReport): Json {
  if (!s.pool.get(b.proxy_id)) {
    throw new RotaError('PROXY_NOT_FOUND', 'Proxy not found', { details: { proxy_id: b.proxy_id } });
  }
  const host = b.host.toLowerCase().replace(/^\[|\]$/g, '');
  const policy = s.banPolicy.get();
  const first = Math.min(b.cooldown_s ?? policy.cooldown_s, policy.max_cooldown_s);
  const c = s.cooldowns.ban(b.proxy_id, host, {
    cooldownS: first,
    maxCooldownS: Math.max(policy.max_cooldown_s, first),
    retryAfterS: null,
  });
  s.retryMetrics.recordBan(b.proxy_id);
  s.shared.banned(b.proxy_id, host, c.until, c.count);
  return { proxy_id: b.proxy_id, host, until: new Date(c.until).toISOString(), count: c.count };
}
