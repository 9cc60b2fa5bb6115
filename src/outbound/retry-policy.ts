import { type Static, Type } from 'typebox';
import { StoredPolicy } from '../control/stored-policy.ts';
import type { ProxyStore } from '../store/types.ts';

export const BACKOFF = ['exponential', 'linear', 'fixed'] as const;

export const RetryPolicySchema = Type.Object({
  max_attempts: Type.Integer({ minimum: 1, maximum: 10 }),
  backoff_strategy: Type.Enum([...BACKOFF]),
  base_delay: Type.Number({ minimum: 0, maximum: 60 }),
  multiplier: Type.Number({ minimum: 1, maximum: 10 }),
  max_backoff_delay: Type.Number({ minimum: 0, maximum: 300 }),
  jitter: Type.Boolean(),
  retry_status_codes: Type.Array(Type.Integer({ minimum: 400, maximum: 599 }), {
    maxItems: 200,
    uniqueItems: true,
  }),
  timeout: Type.Union([Type.Number({ exclusiveMinimum: 0, maximum: 300 }), Type.Null()]),
  retry_non_idempotent: Type.Boolean(),
});
export type RetryPolicy = Static<typeof RetryPolicySchema>;

export const RetryPolicyUpdateSchema = Type.Partial(RetryPolicySchema, { additionalProperties: false });
export type RetryPolicyUpdate = Static<typeof RetryPolicyUpdateSchema>;

export const DEFAULT_POLICY: RetryPolicy = Object.freeze({
  max_attempts: 3,
  backoff_strategy: 'exponential',
  base_delay: 1,
  multiplier: 2,
  max_backoff_delay: 30,
  jitter: true,
  retry_status_codes: [502, 503, 504],
  timeout: null,
  retry_non_idempotent: false,
}) as RetryPolicy;

const KEY = 'retry_policy';

/** Seconds to wait before attempt `attempt` (2 = first retry). */
export function backoffSeconds(p: RetryPolicy, attempt: number, random: () => number): number {
  const n = Math.max(1, attempt - 1);
  let d: number;
  if (p.backoff_strategy === 'fixed') d = p.base_delay;
  else if (p.backoff_strategy === 'linear') d = p.base_delay * n;
  else d = p.base_delay * p.multiplier ** (n - 1);
  d = Math.min(d, p.max_backoff_delay);
  // Full jitter keeps many clients that failed together from retrying together.
  return p.jitter ? d * random() : d;
}

/** The live policy. `max_attempts` is the same value as the config's `max_retries` (docs/decisions.md). */
export class RetryPolicyHolder extends StoredPolicy<RetryPolicy> {
  constructor(store: ProxyStore, maxAttempts: number) {
    super(store, KEY, RetryPolicySchema, { ...DEFAULT_POLICY, max_attempts: maxAttempts });
  }
}

/** Checks that need more than one field. Returns problems (empty when fine). */
export function crossCheck(p: RetryPolicy): string[] {
  const out: string[] = [];
  if (p.max_backoff_delay < p.base_delay) {
    out.push('max_backoff_delay must be >= base_delay');
  }
  return out;
}
