import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BreakerRegistry } from './registry.ts';

const SETTINGS = { failureThreshold: 2, windowS: 60, timeoutS: 30 };

function setup(extra: { historyCap?: number; retentionMs?: number } = {}) {
  const clock = { t: 1_700_000_000_000 };
  const reg = new BreakerRegistry({ settings: SETTINGS, now: () => clock.t, ...extra });
  const trip = (id: string): void => {
    for (let i = 0; i < 2; i++) reg.admit(id)?.release('failure');
  };
  return { clock, reg, trip };
}

describe('BreakerRegistry', () => {
  it('reports snapshots in the GET circuit-breakers shape for every added breaker', () => {
    const { clock, reg, trip } = setup();
    reg.add('a');
    reg.add('b');
    reg.add('a');
    trip('b');
    assert.equal(reg.size, 2);
    assert.deepEqual(reg.snapshots(), [
      {
        proxy_id: 'a',
        state: 'closed',
        failure_count: 0,
        failure_threshold: 2,
        window_duration: 60,
        timeout_duration: 30,
        next_test_time: null,
        last_state_change: clock.t,
      },
      {
        proxy_id: 'b',
        state: 'open',
        failure_count: 2,
        failure_threshold: 2,
        window_duration: 60,
        timeout_duration: 30,
        next_test_time: clock.t + 30_000,
        last_state_change: clock.t,
      },
    ]);
    assert.equal(reg.snapshot('nope'), undefined);
    assert.equal(reg.state('nope'), 'closed');
    assert.equal(reg.isAdmissible('nope'), true);
  });

  it('earliestHalfOpenAt gives the soonest re-admission for Retry-After', () => {
    const { clock, reg, trip } = setup();
    assert.equal(reg.earliestHalfOpenAt(), null);
    trip('a');
    clock.t += 10_000;
    trip('b');
    assert.equal(reg.earliestHalfOpenAt(), clock.t + 20_000);
    assert.equal(reg.earliestHalfOpenAt(['b']), clock.t + 30_000);
    assert.equal(reg.earliestHalfOpenAt(['b', 'unknown']), clock.t);
    clock.t += 20_000;
    const trial = reg.admit('a');
    assert.equal(trial?.trial, true);
    assert.equal(reg.earliestHalfOpenAt(['a']), clock.t + 30_000, 'trial lease bounds the wait');
    trial?.release('neutral');
    assert.equal(reg.earliestHalfOpenAt(['a']), clock.t);
  });

  it('events(since) filters by time and observes elapsed timeouts first', () => {
    const { clock, reg, trip } = setup();
    trip('a');
    const t0 = clock.t;
    clock.t += 40_000;
    trip('b');
    const all = reg.events(0);
    assert.deepEqual(
      all.map((e) => [e.proxy_id, e.to_state, e.timestamp - t0]),
      [
        ['a', 'open', 0],
        ['a', 'half-open', 30_000],
        ['b', 'open', 40_000],
      ],
    );
    assert.deepEqual(
      reg.events(t0 + 1).map((e) => e.to_state),
      ['half-open', 'open'],
    );
  });

  it('keeps at most historyCap events and drops those past retention', () => {
    const { clock, reg } = setup({ historyCap: 3, retentionMs: 1000 });
    reg.add('a');
    for (let i = 0; i < 5; i++) reg.reset('a');
    assert.equal(reg.events(0).length, 3);
    clock.t += 1001;
    reg.reset('a');
    assert.equal(reg.events(0).length, 1);
  });

  it('a removed breaker is forgotten and its late permits change nothing', () => {
    const { reg } = setup();
    const seen: string[] = [];
    reg.onTransition((e) => seen.push(e.to_state));
    const p1 = reg.admit('a');
    const p2 = reg.admit('a');
    assert.equal(reg.remove('a'), true);
    assert.equal(reg.remove('a'), false);
    p1?.release('failure');
    p2?.release('failure');
    assert.deepEqual(seen, []);
    assert.equal(reg.has('a'), false);
    assert.equal(reg.state('a'), 'closed');
  });

  it('listeners can unsubscribe and a throwing listener breaks nothing', () => {
    const { reg, trip } = setup();
    const seen: string[] = [];
    reg.onTransition(() => {
      throw new Error('listener bug');
    });
    const off = reg.onTransition((e) => seen.push(e.reason));
    trip('a');
    off();
    reg.reset('a');
    assert.deepEqual(seen, ['threshold']);
    assert.equal(reg.state('a'), 'closed');
    assert.equal(reg.events(0).length, 2);
  });
});
