import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { BreakerRegistry } from './registry.ts';
import type { BreakerEvent, BreakerStateName, Permit } from './types.ts';

const SETTINGS = { failureThreshold: 3, windowS: 10, timeoutS: 5 };

function setup(settings = SETTINGS, extra: { trialLeaseMs?: number } = {}) {
  const clock = { t: 1_000_000 };
  const reg = new BreakerRegistry({ settings, now: () => clock.t, ...extra });
  const events: BreakerEvent[] = [];
  reg.onTransition((e) => events.push(e));
  return { clock, reg, events };
}

function fail(reg: BreakerRegistry, id: string): void {
  const p = reg.admit(id);
  assert.ok(p, 'closed breaker admits');
  p.release('failure');
}

type Op =
  | { kind: 'advance'; ms: number }
  | { kind: 'admit' }
  | { kind: 'release'; pick: number; result: 'success' | 'failure' | 'neutral' }
  | { kind: 'reset' }
  | { kind: 'read' };

// Weighted so that runs often trip the breaker and reach half-open trials: failures dominate releases,
// and resets (which wipe the progress) are rare.
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 7000 }).map((ms) => ({ kind: 'advance' as const, ms })) },
  { weight: 8, arbitrary: fc.constant({ kind: 'admit' as const }) },
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      pick: fc.nat(),
      result: fc.constantFrom('failure' as const, 'failure' as const, 'success' as const, 'neutral' as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'reset' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'read' as const }) },
);

interface Held {
  permit: Permit;
  leaseUntil: number;
}

/** Replays events per proxy: each one must start where the previous one ended. */
function checkChain(events: readonly BreakerEvent[], id: string): BreakerStateName {
  let state: BreakerStateName = 'closed';
  for (const e of events.filter((x) => x.proxy_id === id)) {
    assert.equal(e.from_state, state, `event chain broken at ${JSON.stringify(e)}`);
    if (e.reason !== 'manual_reset') assert.notEqual(e.from_state, e.to_state);
    state = e.to_state;
  }
  return state;
}

describe('circuit breaker properties (fake clock)', () => {
  it('one trial at a time, consistent events, never wedged', () => {
    const reasons = new Set<string>();
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 120, size: 'max' }), (ops) => {
        const { clock, reg, events } = setup();
        reg.onTransition((e) => reasons.add(e.reason));
        const held: Held[] = [];
        for (const op of ops) {
          if (op.kind === 'advance') clock.t += op.ms;
          else if (op.kind === 'reset') reg.reset('p') || reg.add('p');
          else if (op.kind === 'read') reg.snapshots();
          else if (op.kind === 'release' && held.length > 0) {
            const [h] = held.splice(op.pick % held.length, 1);
            h?.permit.release(op.result);
            h?.permit.release('failure'); // idempotent: the second call must change nothing
          } else if (op.kind === 'admit') {
            const before = reg.state('p');
            const live = held.filter((h) => h.permit.trial && h.leaseUntil > clock.t).length;
            const p = reg.admit('p');
            if (p?.trial) {
              assert.equal(before, 'half-open');
              assert.equal(live, 0, 'a second trial while one is in flight');
              held.push({ permit: p, leaseUntil: clock.t + SETTINGS.timeoutS * 1000 });
            } else if (p) {
              assert.equal(before, 'closed');
              held.push({ permit: p, leaseUntil: Number.POSITIVE_INFINITY });
            } else {
              assert.notEqual(before, 'closed');
            }
          }
          const now = reg.state('p'); // read first: reading is what emits an elapsed timeout's event
          assert.equal(checkChain(events, 'p'), now);
          assert.deepEqual(reg.events(0), events);
        }
        // Release everything that is left: within one timeout a request is admitted again.
        for (const h of held) h.permit.release('neutral');
        clock.t += SETTINGS.timeoutS * 1000;
        assert.ok(reg.admit('p'), 'wedged after every permit was released');
      }),
      { numRuns: 300 },
    );
    // The generator must reach every transition, or the properties above prove little.
    assert.deepEqual([...reasons].sort(), [
      'manual_reset',
      'threshold',
      'timeout_elapsed',
      'trial_failed',
      'trial_succeeded',
    ]);
  });

  it('a trial that is never released stops blocking after its lease', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20_000 }), (lease) => {
        const { clock, reg } = setup(SETTINGS, { trialLeaseMs: lease });
        for (let i = 0; i < 3; i++) fail(reg, 'p');
        clock.t += 5000;
        const first = reg.admit('p');
        assert.equal(first?.trial, true);
        clock.t += lease - 1;
        assert.equal(reg.admit('p'), null);
        assert.equal(reg.isAdmissible('p'), false);
        clock.t += 1;
        assert.equal(reg.isAdmissible('p'), true);
        const second = reg.admit('p');
        assert.equal(second?.trial, true);
        // The abandoned trial reporting late must not decide anything.
        first?.release('success');
        assert.equal(reg.state('p'), 'half-open');
        second?.release('success');
        assert.equal(reg.state('p'), 'closed');
      }),
      { numRuns: 100 },
    );
  });

  it('opens exactly when threshold failures fall inside the window', () => {
    const step = fc.record({ gap: fc.integer({ min: 0, max: 6000 }), ok: fc.boolean() });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.array(step, { maxLength: 60, size: 'max' }),
        (threshold, steps) => {
          const settings = { failureThreshold: threshold, windowS: 10, timeoutS: 1_000_000 };
          const { clock, reg } = setup(settings);
          const failures: number[] = [];
          let expectOpen = false;
          for (const s of steps) {
            clock.t += s.gap;
            const p = reg.admit('p');
            assert.equal(p === null, expectOpen);
            if (!p) continue;
            p.release(s.ok ? 'success' : 'failure');
            if (!s.ok) failures.push(clock.t);
            const inWindow = failures.filter((t) => t > clock.t - 10_000).length;
            expectOpen = inWindow >= threshold;
            assert.equal(reg.state('p'), expectOpen ? 'open' : 'closed');
            if (!expectOpen) assert.equal(reg.snapshot('p')?.failure_count, inWindow);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('circuit breaker transitions', () => {
  it('turns half-open as soon as the timeout passes, stamped at that moment', () => {
    const { clock, reg, events } = setup();
    for (let i = 0; i < 3; i++) fail(reg, 'p');
    const openedAt = clock.t;
    assert.deepEqual(
      events.map((e) => [e.from_state, e.to_state, e.reason, e.failure_count]),
      [['closed', 'open', 'threshold', 3]],
    );
    assert.equal(reg.snapshot('p')?.next_test_time, openedAt + 5000);
    clock.t += 4999;
    assert.equal(reg.state('p'), 'open');
    clock.t += 1 + 12_345; // observed late: the event still carries the time the timeout elapsed
    assert.equal(reg.state('p'), 'half-open');
    assert.equal(events.length, 2);
    assert.deepEqual(events[1], {
      proxy_id: 'p',
      from_state: 'open',
      to_state: 'half-open',
      timestamp: openedAt + 5000,
      failure_count: 3,
      reason: 'timeout_elapsed',
    });
    assert.equal(reg.snapshot('p')?.last_state_change, openedAt + 5000);
  });

  it('a failed trial re-opens for another timeout; a successful one closes', () => {
    const { clock, reg, events } = setup();
    for (let i = 0; i < 3; i++) fail(reg, 'p');
    clock.t += 5000;
    const trial = reg.admit('p');
    assert.equal(trial?.trial, true);
    assert.equal(reg.admit('p'), null, 'only one trial');
    clock.t += 100;
    trial?.release('failure');
    assert.equal(reg.state('p'), 'open');
    assert.equal(reg.snapshot('p')?.next_test_time, clock.t + 5000);
    assert.equal(reg.snapshot('p')?.failure_count, 4);
    clock.t += 5000;
    const neutral = reg.admit('p');
    neutral?.release('neutral');
    assert.equal(reg.state('p'), 'half-open', 'neutral releases the slot only');
    reg.admit('p')?.release('success');
    assert.equal(reg.state('p'), 'closed');
    assert.equal(reg.snapshot('p')?.failure_count, 0);
    assert.deepEqual(
      events.map((e) => e.reason),
      ['threshold', 'timeout_elapsed', 'trial_failed', 'timeout_elapsed', 'trial_succeeded'],
    );
  });

  it('ignores outcomes of permits taken before a transition', () => {
    const { reg } = setup();
    const stale = reg.admit('p');
    for (let i = 0; i < 3; i++) fail(reg, 'p');
    reg.reset('p');
    stale?.release('failure');
    assert.equal(reg.snapshot('p')?.failure_count, 0);
  });

  it('manual reset closes from any state with an event', () => {
    const { reg, events } = setup();
    reg.add('p');
    assert.equal(reg.reset('p'), true);
    for (let i = 0; i < 3; i++) fail(reg, 'p');
    assert.equal(reg.reset('p'), true);
    assert.equal(reg.state('p'), 'closed');
    assert.equal(reg.reset('unknown'), false);
    assert.deepEqual(
      events.map((e) => [e.from_state, e.to_state, e.reason]),
      [
        ['closed', 'closed', 'manual_reset'],
        ['closed', 'open', 'threshold'],
        ['open', 'closed', 'manual_reset'],
      ],
    );
  });
});
