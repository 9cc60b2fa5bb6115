import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryStore } from '../store/memory.ts';
import { backoffSeconds, crossCheck, DEFAULT_POLICY, RetryPolicyHolder } from './retry-policy.ts';

describe('retry policy', () => {
  it('computes exponential, linear and fixed back-off, capped, with full jitter', () => {
    const p = { ...DEFAULT_POLICY, jitter: false, base_delay: 1, multiplier: 3, max_backoff_delay: 5 };
    assert.deepEqual(
      [2, 3, 4].map((n) => backoffSeconds(p, n, Math.random)),
      [1, 3, 5],
    );
    const lin = { ...p, backoff_strategy: 'linear' as const };
    assert.deepEqual(
      [2, 3, 4, 9].map((n) => backoffSeconds(lin, n, Math.random)),
      [1, 2, 3, 5],
    );
    const fixed = { ...p, backoff_strategy: 'fixed' as const, base_delay: 2 };
    assert.deepEqual(
      [2, 5].map((n) => backoffSeconds(fixed, n, Math.random)),
      [2, 2],
    );
    assert.equal(
      backoffSeconds({ ...p, jitter: true }, 3, () => 0.5),
      1.5,
    );
  });

  it('refuses a cap below the base delay', () => {
    assert.deepEqual(crossCheck({ ...DEFAULT_POLICY, base_delay: 10, max_backoff_delay: 5 }).length, 1);
    assert.deepEqual(crossCheck(DEFAULT_POLICY), []);
  });

  it('stores only the fields a PUT set, so untouched ones follow the environment after restart', async () => {
    const store = new MemoryStore();
    await store.open();
    const first = new RetryPolicyHolder(store, 3);
    await first.update({ base_delay: 0.25, timeout: 12 });
    assert.deepEqual(await store.getSetting('retry_policy'), { base_delay: 0.25, timeout: 12 });
    // ROTA_MAX_RETRIES changed to 7 between runs: it wins because max_attempts was never PUT.
    const second = new RetryPolicyHolder(store, 7);
    assert.equal(await second.load(), true);
    assert.equal(second.get().max_attempts, 7);
    assert.equal(second.get().base_delay, 0.25);
    await second.update({ timeout: null });
    assert.equal(second.get().timeout, null);
  });

  it('ignores stored values that are no longer valid', async () => {
    const store = new MemoryStore();
    await store.open();
    await store.putSetting('retry_policy', {
      max_attempts: 99,
      backoff_strategy: 'quadratic',
      jitter: false,
    });
    const h = new RetryPolicyHolder(store, 4);
    await h.load();
    assert.equal(h.get().max_attempts, 4);
    assert.equal(h.get().backoff_strategy, 'exponential');
    assert.equal(h.get().jitter, false);
  });
});
