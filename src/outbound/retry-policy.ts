import { type Static, Type } from 'typebox';
import { Value } from 'typebox/value';
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

/** The live policy. `max_attempts` is the same value as the config's `max_retries` (DECISIONS). */
export class RetryPolicyHolder {
  private current: RetryPolicy;
  private readonly store: ProxyStore;

  private readonly base: RetryPolicy;
  private overrides: Readonly<RetryPolicyUpdate> = {};

  constructor(store: ProxyStore, maxAttempts: number) {
    this.store = store;
    this.base = Object.freeze({ ...DEFAULT_POLICY, max_attempts: maxAttempts });
    this.current = this.base;
  }

  /**
   * Applies what earlier PUTs stored. Only the fields a PUT set are stored, so a field nobody changed at
   * runtime keeps following its environment variable (ROTA_MAX_RETRIES) across restarts; a stored value
   * that is no longer valid (a database from another version) is ignored.
   */
  async load(): Promise<boolean> {
    const saved = await this.store.getSetting(KEY);
    if (!saved || typeof saved !== 'object' || Array.isArray(saved)) return false;
    const overrides: Record<string, unknown> = {};
    for (const [key, schema] of Object.entries(RetryPolicySchema.properties)) {
      const v = (saved as Record<string, unknown>)[key];
      if (v !== undefined && Value.Check(schema, v)) overrides[key] = v;
    }
    this.overrides = Object.freeze(overrides as RetryPolicyUpdate);
    this.current = Object.freeze({ ...this.base, ...this.overrides });
    return true;
  }

  get(): RetryPolicy {
    return this.current;
  }

  /** Explicit null resets a nullable field; absent fields stay. Persist first, then swap. */
  async update(patch: RetryPolicyUpdate): Promise<RetryPolicy> {
    const overrides = Object.freeze({ ...this.overrides, ...patch });
    const next = Object.freeze({ ...this.base, ...overrides });
    await this.store.putSetting(KEY, overrides);
    this.overrides = overrides;
    this.current = next;
    return next;
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
