import { ipBucket } from '../lib/ip-bucket.ts';
import type { Rate } from '../lib/rate.ts';
import type { RateCounter, Taken } from '../lib/rate-counter.ts';

/**
 * One failed-auth budget per client IP (ROTA_AUTH_FAILURE_LIMIT), shared by the API and both listeners,
 * and by every instance when the counters live in Redis: a wrong key costs one unit wherever it is
 * presented, so a client gets `limit` guesses a window in all, not one allowance per route or per door.
 *
 * Every presented key is charged before its answer is known to the client: a wrong key takes a unit, a
 * right one takes none, and both are refused once the budget is spent. The check and the count are one
 * atomic step (RateCounter.take), so a burst of wrong keys, however many are in flight together, gets at
 * most `limit` answers that depend on the key; the rest are `limited`, an answer the same for a right key
 * and a wrong one. A right key never takes a unit, so valid traffic, however concurrent, is refused only
 * when the IP has already spent its budget on wrong keys.
 *
 * No key at all is not charged: it cannot be right, so its refusal tells nothing about the key, and
 * clients that wait for the challenge (curl --proxy-anyauth, browsers answering a 407) send one keyless
 * request before each keyed one. Keyless requests still count against the API's per-IP rate limits.
 */
export type BudgetVerdict =
  | { readonly type: 'within' }
  | { readonly type: 'limited'; readonly retryAfterS: number };

const WITHIN: BudgetVerdict = Object.freeze({ type: 'within' });

/** The counter name of an IP's budget, apart from the rate limiter's names (`default|`, `request|`, ...). */
export function budgetKey(clientIp: string): string {
  return `authfail|ip:${ipBucket(clientIp)}`;
}

export class AuthFailureBudget {
  readonly #counter: RateCounter;
  readonly #rate: Rate;

  constructor(counter: RateCounter, rate: Rate) {
    this.#counter = counter;
    this.#rate = rate;
  }

  get limit(): number {
    return this.#rate.limit;
  }

  /** `wrong`: the presented key is not the API key. At once (no promise) with in-process counters. */
  charge(clientIp: string, wrong: boolean): BudgetVerdict | Promise<BudgetVerdict> {
    const t = this.#counter.take(budgetKey(clientIp), this.#rate.limit, this.#rate.windowMs, wrong ? 1 : 0);
    return t instanceof Promise ? t.then(verdict) : verdict(t);
  }
}

function verdict(t: Taken): BudgetVerdict {
  if (t.type === 'under') return WITHIN;
  return { type: 'limited', retryAfterS: Math.max(1, Math.ceil(t.ttlMs / 1000)) };
}
