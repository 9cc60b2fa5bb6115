import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryRateCounter } from './rate-counter.ts';

describe('MemoryRateCounter.take', () => {
  it('counts up to the limit, then refuses without counting', () => {
    const c = new MemoryRateCounter();
    const got = Array.from({ length: 5 }, () => c.take('k', 3, 60_000, 1));
    assert.deepEqual(
      got.map((t) => [t.type, t.count]),
      [
        ['under', 1],
        ['under', 2],
        ['under', 3],
        ['over', 3],
        ['over', 3],
      ],
    );
    assert.equal(c.peek('k', 60_000).count, 3, 'the refused takes counted nothing');
  });

  it('answers at once, so a burst of takes in one turn is held to the limit', () => {
    const c = new MemoryRateCounter();
    const taken = Array.from({ length: 1_000 }, () => c.take('k', 60, 60_000, 1));
    assert.ok(taken.every((t) => !(t instanceof Promise)));
    assert.equal(taken.filter((t) => t.type === 'under').length, 60);
  });

  it('a cost of 0 only checks: under below the limit, over at it, and never counts', () => {
    const c = new MemoryRateCounter();
    assert.deepEqual(c.take('k', 2, 60_000, 0), { type: 'under', count: 0, ttlMs: 60_000 });
    c.take('k', 2, 60_000, 1);
    assert.equal(c.take('k', 2, 60_000, 0).type, 'under');
    c.take('k', 2, 60_000, 1);
    assert.equal(c.take('k', 2, 60_000, 0).type, 'over');
    assert.equal(c.peek('k', 60_000).count, 2);
  });

  it('gives the time left in the window, and starts again once it is over', () => {
    let now = 1_000;
    const c = new MemoryRateCounter({ now: () => now });
    c.take('k', 1, 10_000, 1);
    now += 4_000;
    assert.deepEqual(c.take('k', 1, 10_000, 1), { type: 'over', count: 1, ttlMs: 6_000 });
    now += 6_000;
    assert.deepEqual(c.take('k', 1, 10_000, 1), { type: 'under', count: 1, ttlMs: 10_000 });
  });

  it('shares its counts with incr: one counter per key whichever call counts', () => {
    const c = new MemoryRateCounter();
    c.incr('k', 60_000);
    c.incr('k', 60_000);
    assert.deepEqual(c.take('k', 3, 60_000, 1).count, 3);
    assert.equal(c.take('k', 3, 60_000, 1).type, 'over');
  });
});
