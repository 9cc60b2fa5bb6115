import { type Static, Type } from 'typebox';
import type { Config } from '../config.ts';
import { StoredPolicy } from '../control/stored-policy.ts';
import type { ProxyStore } from '../store/types.ts';

/**
 * When a target's answer is a ban of the proxy's address (docs/decisions.md, "Bans and pair refusals"): a
 * status code or a body pattern. Patterns are plain substrings, compared case-insensitively: no regular
 * expressions, so no pattern can make matching slow (ReDoS).
 */
export const BanPolicySchema = Type.Object({
  enabled: Type.Boolean(),
  status_codes: Type.Array(Type.Integer({ minimum: 400, maximum: 599 }), {
    maxItems: 200,
    uniqueItems: true,
  }),
  body_patterns: Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 20 }),
  cooldown_s: Type.Integer({ minimum: 1, maximum: 86_400, description: 'First cool-down of a pair' }),
  max_cooldown_s: Type.Integer({
    minimum: 1,
    maximum: 604_800,
    description: 'Cool-downs double on repeated bans up to this; at least cooldown_s',
  }),
});
export type BanPolicy = Static<typeof BanPolicySchema>;

export const BanPolicyUpdateSchema = Type.Partial(BanPolicySchema, { additionalProperties: false });
export type BanPolicyUpdate = Static<typeof BanPolicyUpdateSchema>;

export class BanPolicyHolder extends StoredPolicy<BanPolicy> {
  constructor(store: ProxyStore, config: Config) {
    super(store, 'ban_policy', BanPolicySchema, {
      enabled: true,
      status_codes: [...config.bans.statusCodes],
      body_patterns: [],
      cooldown_s: config.bans.cooldownS,
      max_cooldown_s: config.bans.maxCooldownS,
    });
  }
}

/** Checks across fields and against the current policy; problems, one line each (empty when fine). */
export function banPolicyProblems(current: BanPolicy, patch: BanPolicyUpdate): string[] {
  const next = { ...current, ...patch };
  const out: string[] = [];
  if (next.max_cooldown_s < next.cooldown_s) out.push('max_cooldown_s must be >= cooldown_s');
  const blank = (patch.body_patterns ?? []).findIndex((p) => p.trim() === '');
  if (blank !== -1) out.push(`body_patterns[${blank}] must not be blank`);
  return out;
}
