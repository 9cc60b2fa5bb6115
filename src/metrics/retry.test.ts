import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttemptRecord, CallRecord } from './calls.ts';
import { HOUR_MS, RetryMetrics } from './retry.ts';

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';
const T0 = Date.UTC(2025, 0, 1, 10, 0, 0); // 2025-01-01T10:00Z
const MIN = 60_000;

function attempt(
  proxyId: string,
  n: number,
  outcome: AttemptRecord['outcome'],
  latencyMs = 100,
): AttemptRecord {
  return { proxyId, attempt: n, outcome, latencyMs };
}

/** A call through `proxies` in order; ok calls succeed on their last attempt. */
function call(ok: boolean, proxies: string[], latencyMs = 1000): CallRecord {
  const attempts = proxies.map((p, i) =>
    attempt(p, i + 1, ok && i === proxies.length - 1 ? 'success' : 'proxy_error', latencyMs / proxies.length),
  );
  return ok
    ? { ok, latencyMs, attempts }
    : { ok, latencyMs, attempts, errorCode: 'PROXY_FAILOVER_EXHAUSTED' };
}

function setup(retentionHours = 24, events = 0) {
  const c = { t: T0 };
  const m = new RetryMetrics({ now: () => c.t, retentionHours, breakerEventsCount: () => events });
  return { c, m };
}

describe('RetryMetrics', () => {
  it('counts only attempts after the first as retries', () => {
    const { m } = setup();
    m.recordCall(call(true, [A]));
    m.recordCall(call(true, [A, B]));
    m.recordCall(call(false, [A, B, A]));
    m.recordCall(call(false, []));
    assert.equal(m.summary().total_retries, 0 + 1 + 2 + 0);
  });

  it('reports success_by_attempt keyed by the attempt number as a string', () => {
    const { m } = setup(24, 7);
    m.recordCall(call(true, [A]));
    m.recordCall(call(true, [B]));
    m.recordCall(call(true, [A, B, A]));
    m.recordCall(call(false, [A, B]));
    assert.deepEqual(m.summary(), {
      total_retries: 3,
      success_by_attempt: { '1': 2, '3': 1 },
      circuit_breaker_events_count: 7,
      ban_events_count: 0,
      retention_hours: 24,
    });
  });

  it('builds hourly timeseries with ISO hour starts, success_rate 0-1 and latency in seconds', () => {
    const { c, m } = setup();
    c.t = T0 + 5 * MIN;
    m.recordCall(call(true, [A], 200));
    c.t = T0 + 55 * MIN;
    m.recordCall(call(false, [A, B], 600));
    c.t = T0 + HOUR_MS + 10 * MIN;
    m.recordCall(call(true, [B, A], 1500));
    assert.deepEqual(m.timeseries(24), [
      {
        timestamp: '2025-01-01T10:00:00.000Z',
        total_requests: 2,
        total_retries: 1,
        success_rate: 0.5,
        avg_latency: 0.4,
      },
      {
        timestamp: '2025-01-01T11:00:00.000Z',
        total_requests: 1,
        total_retries: 1,
        success_rate: 1,
        avg_latency: 1.5,
      },
    ]);
    assert.deepEqual(
      m.timeseries(1).map((h) => h.timestamp),
      ['2025-01-01T11:00:00.000Z'],
      'hours=1 is the current hour only',
    );
  });

  it('aggregates by proxy over the requested hours, breaker opens and bans included', () => {
    const { c, m } = setup();
    m.recordCall(call(true, [A, B], 400)); // A fails 200 ms, B succeeds 200 ms
    m.recordBreakerOpen(A);
    m.recordBan(B);
    c.t += 2 * HOUR_MS;
    m.recordCall(call(true, [A], 100));
    const all = m.byProxy(24);
    assert.deepEqual(all[A], {
      proxy_id: A,
      total_attempts: 2,
      success_count: 1,
      failure_count: 1,
      avg_latency: 0.15,
      circuit_breaker_opens: 1,
      bans: 0,
    });
    assert.deepEqual(all[B], {
      proxy_id: B,
      total_attempts: 1,
      success_count: 1,
      failure_count: 0,
      avg_latency: 0.2,
      circuit_breaker_opens: 0,
      bans: 1,
    });
    const recent = m.byProxy(1);
    assert.deepEqual(Object.keys(recent), [A]);
    assert.equal(recent[A]!.total_attempts, 1);
    assert.equal(recent[A]!.circuit_breaker_opens, 0);
  });

  it('keeps only retentionHours of buckets, pruning on write', () => {
    const { c, m } = setup(3);
    for (let h = 0; h < 10; h++) {
      c.t = T0 + h * HOUR_MS;
      m.recordCall(call(true, [A, B]));
    }
    assert.equal(m.bucketCount, 3);
    assert.equal(m.summary().total_retries, 3, 'summary covers the retention window only');
    assert.deepEqual(m.summary().success_by_attempt, { '2': 3 });
    assert.equal(m.timeseries(720).length, 3, 'a window wider than retention sees only what is kept');
    assert.equal(m.byProxy(720)[A]!.total_attempts, 3);
  });

  it('ages data out of reads even without new writes', () => {
    const { c, m } = setup(2);
    m.recordCall(call(true, [A]));
    c.t += 2 * HOUR_MS;
    assert.deepEqual(m.timeseries(24), []);
    assert.equal(m.summary().total_retries, 0);
    assert.deepEqual(m.byProxy(24), {});
  });

  it('stays bounded by hours × proxies under heavy traffic', () => {
    const { c, m } = setup(4);
    const proxies = [A, B];
    for (let i = 0; i < 40_000; i++) {
      c.t = T0 + i * 1000; // ~11 hours
      m.recordCall(call(i % 3 !== 0, [proxies[i % 2]!, proxies[(i + 1) % 2]!]));
    }
    assert.ok(m.bucketCount <= 4);
    assert.equal(Object.keys(m.byProxy(720)).length, 2);
  });

  it('removeProxy drops that proxy from every hourly bucket', () => {
    const live = new Set([A, B]);
    const c = { t: T0 };
    const m = new RetryMetrics({
      now: () => c.t,
      retentionHours: 24,
      breakerEventsCount: () => 0,
      proxyExists: (id) => live.has(id),
    });
    for (let h = 0; h < 5; h++) {
      c.t = T0 + h * HOUR_MS;
      m.recordCall(call(true, [A, B]));
    }
    live.delete(A);
    m.removeProxy(A);
    m.recordCall(call(true, [A])); // in flight at deletion
    m.recordBreakerOpen(A);
    assert.deepEqual(Object.keys(m.byProxy(720)), [B]);
    assert.equal(m.summary().total_retries, 5, 'call-level history is not the proxy’s and stays');
  });

  it('drops buckets left in the future when the wall clock steps back', () => {
    const { c, m } = setup(24);
    c.t = T0 + 10 * HOUR_MS;
    m.recordCall(call(true, [A]));
    c.t = T0;
    m.recordCall(call(true, [A]));
    assert.equal(m.bucketCount, 1);
    assert.equal(m.timeseries(24).length, 1);
  });

  it('report() combines summary, timeseries and by_proxy for the same hours', () => {
    const { m } = setup();
    m.recordCall(call(true, [A, B]));
    const r = m.report(24);
    assert.deepEqual(r.summary, m.summary());
    assert.deepEqual(r.timeseries, m.timeseries(24));
    assert.deepEqual(r.by_proxy, m.byProxy(24));
  });
});
