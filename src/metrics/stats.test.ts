import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttemptRecord, CallRecord } from './calls.ts';
import { StatsAggregator } from './stats.ts';

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';

function attempt(
  proxyId: string,
  n: number,
  outcome: AttemptRecord['outcome'],
  latencyMs = 100,
): AttemptRecord {
  return { proxyId, attempt: n, outcome, latencyMs };
}

function okCall(latencyMs = 100, proxyId = A): CallRecord {
  return { ok: true, latencyMs, attempts: [attempt(proxyId, 1, 'success', latencyMs)] };
}

function clock(start = 1_000_000) {
  const c = { t: start, now: () => c.t };
  return c;
}

describe('StatsAggregator', () => {
  it('reports zeros before any call', () => {
    const s = new StatsAggregator({ now: clock().now }).snapshot();
    assert.deepEqual(s, {
      requests_total: 0,
      requests_per_second: 0,
      avg_latency_ms: 0,
      error_rate: 0,
      proxy_stats: [],
    });
  });

  it('counts calls, failed calls as a fraction, and the mean call latency', () => {
    const agg = new StatsAggregator({ now: clock().now });
    agg.recordCall(okCall(100));
    agg.recordCall(okCall(300));
    agg.recordCall({ ok: false, latencyMs: 200, errorCode: 'PROXY_POOL_EMPTY', attempts: [] });
    agg.recordCall({
      ok: false,
      latencyMs: 400,
      errorCode: 'PROXY_FAILOVER_EXHAUSTED',
      attempts: [attempt(A, 1, 'proxy_error', 150), attempt(B, 2, 'timeout', 250)],
    });
    const s = agg.snapshot();
    assert.equal(s.requests_total, 4);
    assert.equal(s.error_rate, 0.5);
    assert.equal(s.avg_latency_ms, 250);
  });

  it("keeps per-proxy attempt counts: failures are the proxy's own faults, bans apart, the target's failures neither", () => {
    const agg = new StatsAggregator({ now: clock().now });
    agg.recordCall({
      ok: true,
      latencyMs: 500,
      attempts: [
        attempt(A, 1, 'proxy_error', 100),
        attempt(B, 2, 'target_error', 200),
        attempt(A, 3, 'success', 300),
      ],
    });
    agg.recordCall(okCall(50, B));
    agg.recordCall({
      ok: true,
      latencyMs: 20,
      attempts: [
        { proxyId: A, attempt: 1, outcome: 'target_error', latencyMs: 20, kind: 'banned', status: 403 },
      ],
    });
    const byId = new Map(agg.snapshot().proxy_stats.map((p) => [p.proxy_id, p]));
    assert.deepEqual(byId.get(A), {
      proxy_id: A,
      requests: 3,
      successes: 1,
      failures: 1,
      bans: 1,
      avg_latency_ms: 140,
    });
    // The target's own failure is not the proxy's.
    assert.deepEqual(byId.get(B), {
      proxy_id: B,
      requests: 2,
      successes: 1,
      failures: 0,
      bans: 0,
      avg_latency_ms: 125,
    });
  });

  it('computes requests_per_second over a sliding 60 s window', () => {
    const c = clock(10_000_000);
    const agg = new StatsAggregator({ now: c.now });
    for (let i = 0; i < 30; i++) agg.recordCall(okCall());
    assert.equal(agg.snapshot().requests_per_second, 0.5);
    c.t += 30_000;
    for (let i = 0; i < 60; i++) agg.recordCall(okCall());
    assert.equal(agg.snapshot().requests_per_second, 1.5);
    c.t += 29_999; // 59.999 s after the first batch: still inside the window
    assert.equal(agg.snapshot().requests_per_second, 1.5);
    c.t += 1; // first batch's second has left the window
    assert.equal(agg.snapshot().requests_per_second, 1);
    c.t += 30_000;
    assert.equal(agg.snapshot().requests_per_second, 0);
    assert.equal(agg.snapshot().requests_total, 90, 'the total is not windowed');
  });

  it('reuses a ring slot after a full lap without carrying its old count', () => {
    const c = clock(0);
    const agg = new StatsAggregator({ now: c.now });
    for (let i = 0; i < 12; i++) agg.recordCall(okCall());
    c.t += 120_000; // same slot, two laps later
    agg.recordCall(okCall());
    assert.equal(agg.snapshot().requests_per_second, 1 / 60);
  });

  it('stays bounded: one entry per proxy whatever the traffic', () => {
    const c = clock(0);
    const agg = new StatsAggregator({ now: c.now });
    for (let i = 0; i < 50_000; i++) {
      c.t += 7; // ~6 minutes of traffic
      agg.recordCall(okCall(10, i % 2 === 0 ? A : B));
    }
    const s = agg.snapshot();
    assert.equal(s.proxy_stats.length, 2);
    assert.equal(s.requests_total, 50_000);
    // 60 s at one call per 7 ms, give or take the partial current second.
    assert.ok(Math.abs(s.requests_per_second - 1000 / 7) < 3, String(s.requests_per_second));
  });

  it('removeProxy drops the proxy, and a late call cannot bring it back when proxyExists says no', () => {
    const live = new Set([A, B]);
    const agg = new StatsAggregator({ now: clock().now, proxyExists: (id) => live.has(id) });
    agg.recordCall(okCall(10, A));
    agg.recordCall(okCall(10, B));
    live.delete(A);
    agg.removeProxy(A);
    agg.recordCall(okCall(10, A)); // in flight when A was deleted
    const s = agg.snapshot();
    assert.deepEqual(
      s.proxy_stats.map((p) => p.proxy_id),
      [B],
    );
    assert.equal(s.requests_total, 3, 'the call itself still counts');
  });

  it('ignores non-finite or negative latencies rather than poisoning the mean', () => {
    const agg = new StatsAggregator({ now: clock().now });
    agg.recordCall(okCall(Number.NaN));
    agg.recordCall(okCall(-5));
    agg.recordCall(okCall(90));
    assert.equal(agg.snapshot().avg_latency_ms, 30);
  });
});
