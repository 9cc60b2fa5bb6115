import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorBody, meta } from './envelope.ts';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('envelope timestamps', () => {
  it('are the current time, shared within a millisecond and fresh after it', async () => {
    const before = Date.now();
    const a = meta({ id: 'a' }).timestamp;
    const after = Date.now();
    assert.match(a, ISO);
    const t = Date.parse(a);
    assert.ok(t >= before && t <= after, `${a} within [${before}, ${after}]`);
    await sleep(3);
    const b = meta({ id: 'b' }).timestamp;
    assert.ok(Date.parse(b) > t, 'a later answer carries a later time');
  });

  it('take an explicit clock when given one, for the error body as well', () => {
    const now = new Date('2026-01-02T03:04:05.678Z');
    assert.equal(meta({ id: 'x' }, now).timestamp, '2026-01-02T03:04:05.678Z');
    const e = errorBody({ id: 'x' }, 'INTERNAL_ERROR', 'm', null, undefined, now);
    assert.equal(e.error.timestamp, '2026-01-02T03:04:05.678Z');
    assert.equal(e.meta.timestamp, e.error.timestamp);
  });
});
