/** CallSeries: per-second samples, quantiles within a bucket's width, gaps, the window, per-proxy medians. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttemptRecord, CallRecord } from './calls.ts';
import { CallSeries, type PoolLike, SERIES_SECONDS } from './series.ts';

function call(latencyMs: number, ok = true, attempts: AttemptRecord[] = []): CallRecord {
  return { ok, latencyMs, attempts };
}

function clockAt(startS: number) {
  let ms = startS * 1000;
  return { now: () => ms, set: (s: number) => (ms = s * 1000) };
}

describe('CallSeries', () => {
  it('counts requests and errors per finished second, with p50 and p95 within 5%', () => {
    const c = clockAt(1000);
    const s = new CallSeries({ now: c.now });
    for (let i = 1; i <= 100; i++) s.recordCall(call(i, i % 10 !== 0));
    c.set(1001.5);
    s.recordCall(call(7));
    c.set(1002);
    const out = s.samples();
    assert.deepEqual(out.t, [1000, 1001]);
    assert.deepEqual(out.requests, [100, 1]);
    assert.deepEqual(out.errors, [10, 0]);
    assert.ok(Math.abs(out.p50_ms[0]! - 50) <= 2.5, `p50 ${out.p50_ms[0]}`);
    assert.ok(Math.abs(out.p95_ms[0]! - 95) <= 4.75, `p95 ${out.p95_ms[0]}`);
    assert.ok(Math.abs(out.p50_ms[1]! - 7) <= 0.35);
  });

  it('fills quiet seconds with zeros, returns only samples after `since`, keeps 15 minutes', () => {
    const c = clockAt(100);
    const s = new CallSeries({ now: c.now });
    s.recordCall(call(5));
    c.set(104);
    const out = s.samples();
    assert.deepEqual(out.t, [100, 101, 102, 103]);
    assert.deepEqual(out.requests, [1, 0, 0, 0]);
    assert.deepEqual(out.p50_ms.slice(1), [null, null, null]);
    assert.deepEqual(s.samples(102).t, [103]);
    c.set(5000);
    const later = s.samples();
    assert.equal(later.t.length, SERIES_SECONDS);
    assert.equal(later.t.at(-1), 4999);
  });

  it("keeps the median of each proxy's last 16 successes; none for unknown or removed proxies", () => {
    const c = clockAt(0);
    let removed: ((e: { record: { id: string } }) => void) | undefined;
    const known = new Set(['a', 'b']);
    const pool: PoolLike = {
      get: (id) => (known.has(id) ? {} : undefined),
      listen: (l) => {
        removed = l.removed;
      },
    };
    const s = new CallSeries({ now: c.now, pool });
    const a = (outcome: AttemptRecord['outcome'], latencyMs: number, proxyId = 'a'): AttemptRecord => ({
      proxyId,
      attempt: 1,
      outcome,
      latencyMs,
    });
    s.recordCall(call(10, true, [a('proxy_error', 500), a('success', 10)]));
    s.recordCall(call(30, true, [a('success', 30)]));
    s.recordCall(call(20, true, [a('success', 20), a('success', 5, 'ghost')]));
    assert.equal(s.p50('a'), 20, 'failed attempts are not latencies');
    assert.equal(s.p50('ghost'), null, 'not a pool member');
    assert.equal(s.p50('b'), null, 'no success yet');
    for (let i = 0; i < 40; i++) s.recordCall(call(1, true, [a('success', 100)]));
    assert.equal(s.p50('a'), 100, 'only the last 16 successes count');
    removed?.({ record: { id: 'a' } });
    assert.equal(s.p50('a'), null);
  });
});
