import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryRateCounter } from '../lib/rate-counter.ts';
import { AuthFailureBudget, type BudgetVerdict, budgetKey } from './budget.ts';

const RATE = { limit: 3, windowMs: 60_000 };

/** In-process counters answer at once: never a promise. */
function now(v: BudgetVerdict | Promise<BudgetVerdict>): BudgetVerdict {
  assert.ok(!(v instanceof Promise));
  return v;
}

describe('AuthFailureBudget', () => {
  it('a wrong key takes a unit, a right one none; past the budget both are limited', () => {
    const counter = new MemoryRateCounter();
    const b = new AuthFailureBudget(counter, RATE);
    for (let i = 0; i < 10; i++) assert.deepEqual(b.charge('203.0.113.1', false), { type: 'within' });
    assert.equal(counter.peek(budgetKey('203.0.113.1'), RATE.windowMs).count, 0, 'right keys cost nothing');
    for (let i = 0; i < 3; i++) assert.deepEqual(b.charge('203.0.113.1', true), { type: 'within' });
    assert.deepEqual(b.charge('203.0.113.1', true), { type: 'limited', retryAfterS: 60 });
    assert.deepEqual(b.charge('203.0.113.1', false), { type: 'limited', retryAfterS: 60 });
    assert.deepEqual(b.charge('203.0.113.2', false), { type: 'within' }, 'another client is not affected');
  });

  it('an IPv6 client has one budget per /64', () => {
    const b = new AuthFailureBudget(new MemoryRateCounter(), RATE);
    for (let i = 1; i <= 3; i++) assert.equal(now(b.charge(`2001:db8:1:2::${i}`, true)).type, 'within');
    assert.equal(now(b.charge('2001:db8:1:2:ffff::9', true)).type, 'limited');
    assert.equal(budgetKey('2001:db8:1:2::1'), 'authfail|ip:2001:db8:1:2::/64');
  });

  it('Retry-After is at least 1 s', () => {
    let clock = 0;
    const b = new AuthFailureBudget(new MemoryRateCounter({ now: () => clock }), {
      limit: 1,
      windowMs: 1_000,
    });
    b.charge('198.51.100.1', true);
    clock = 999;
    assert.deepEqual(b.charge('198.51.100.1', true), { type: 'limited', retryAfterS: 1 });
  });
});
