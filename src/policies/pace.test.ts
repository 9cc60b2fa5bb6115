import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HostPacer, LastStarts, type Reservation, type Slot } from './pace.ts';

/** The wait of a granted reservation, or its refusal, without the slot. */
const waitOf = (r: Reservation) => (r.ok ? { ok: true, waitMs: r.waitMs } : r);
function slotOf(r: Reservation): Slot {
  assert.ok(r.ok);
  return r.slot;
}

describe('host pace', () => {
  it('spaces the starts evenly and refuses a start past the wait allowed', () => {
    const p = new HostPacer();
    assert.deepEqual(waitOf(p.reserve('r\nh', 100, 1000, 500)), { ok: true, waitMs: 0 });
    assert.deepEqual(waitOf(p.reserve('r\nh', 100, 1000, 500)), { ok: true, waitMs: 100 });
    assert.deepEqual(waitOf(p.reserve('r\nh', 100, 1050, 500)), { ok: true, waitMs: 150 });
    assert.deepEqual(waitOf(p.reserve('r\nother', 100, 1050, 500)), { ok: true, waitMs: 0 }, 'per host');
    for (let i = 0; i < 3; i++) assert.equal(p.reserve('r\nh', 100, 1050, 500).ok, true);
    const refused = p.reserve('r\nh', 100, 1050, 500);
    assert.deepEqual(refused, { ok: false, retryAfterMs: 550 });
    // A refusal reserves nothing: the next call may still have the slot after it.
    assert.deepEqual(waitOf(p.reserve('r\nh', 100, 1100, 500)), { ok: true, waitMs: 500 });
  });

  it('a start given back frees the schedule: the last at once, one in the middle once those after it go', () => {
    const p = new HostPacer();
    const key = 'r\nh';
    const slots = [0, 1, 2, 3].map(() => slotOf(p.reserve(key, 100, 1000, 10_000)));
    assert.deepEqual(
      slots.map((s) => s.at),
      [1000, 1100, 1200, 1300],
    );
    p.release(slots[3] as Slot);
    assert.equal(slotOf(p.reserve(key, 100, 1000, 10_000)).at, 1300, 'the last start is free again');
    const again = slotOf(p.reserve(key, 100, 1000, 10_000));
    assert.equal(again.at, 1400);
    // Given back out of order: 1100 waits behind 1200, 1300 and 1400, then all four free at once.
    p.release(slots[1] as Slot);
    assert.equal(slotOf(p.reserve(key, 100, 1000, 10_000)).at, 1500, 'a start in the middle stays a gap');
    p.release({ key, at: 1500, end: 1600 });
    p.release(slots[2] as Slot);
    p.release({ key, at: 1300, end: 1400 });
    p.release(again);
    assert.equal(slotOf(p.reserve(key, 100, 1000, 10_000)).at, 1100, 'every start after 1000 came back');
  });

  it('a crowd that queues and leaves leaves the host open to the next caller', () => {
    const p = new HostPacer();
    const crowd = Array.from({ length: 50 }, () => slotOf(p.reserve('r\nh', 1000, 0, 60_000)));
    assert.equal(p.reserve('r\nh', 1000, 0, 5_000).ok, false, 'while they wait, a later caller is refused');
    // The first started at once; the 49 that waited go away, in any order.
    for (const s of crowd.slice(1).sort(() => Math.random() - 0.5)) p.release(s);
    assert.deepEqual(
      waitOf(p.reserve('r\nh', 1000, 1, 5_000)),
      { ok: true, waitMs: 999 },
      'the first start kept',
    );
  });

  it('stays bounded under ever new hosts', () => {
    const p = new HostPacer();
    for (let i = 0; i < 150_000; i++) p.reserve(`r\n${i}`, 1000, i, 0);
    assert.ok(p.size <= 100_001, String(p.size));
  });

  it('tells when a proxy may start again to a host', () => {
    const s = new LastStarts();
    assert.equal(s.freeAt('h', 'p1', 500), 0);
    s.started('h', 'p1', 1000);
    assert.equal(s.freeAt('h', 'p1', 500), 1500);
    assert.equal(s.freeAt('h', 'p2', 500), 0);
    assert.equal(s.freeAt('other', 'p1', 500), 0);
  });
});
