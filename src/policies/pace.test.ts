import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HostPacer, LastStarts } from './pace.ts';

describe('host pace', () => {
  it('spaces the starts evenly and refuses a start past the wait allowed', () => {
    const p = new HostPacer();
    assert.deepEqual(p.reserve('r\nh', 100, 1000, 500), { ok: true, waitMs: 0 });
    assert.deepEqual(p.reserve('r\nh', 100, 1000, 500), { ok: true, waitMs: 100 });
    assert.deepEqual(p.reserve('r\nh', 100, 1050, 500), { ok: true, waitMs: 150 });
    assert.deepEqual(p.reserve('r\nother', 100, 1050, 500), { ok: true, waitMs: 0 }, 'per host');
    for (let i = 0; i < 3; i++) assert.equal(p.reserve('r\nh', 100, 1050, 500).ok, true);
    const refused = p.reserve('r\nh', 100, 1050, 500);
    assert.deepEqual(refused, { ok: false, retryAfterMs: 550 });
    // A refusal reserves nothing: the next call may still have the slot after it.
    assert.deepEqual(p.reserve('r\nh', 100, 1100, 500), { ok: true, waitMs: 500 });
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
