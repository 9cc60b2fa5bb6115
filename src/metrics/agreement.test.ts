import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseSamples, sumOf } from '../../test/helpers/metrics.ts';
import type { AttemptRecord, CallRecord } from './calls.ts';
import { PromMetrics } from './prometheus.ts';
import { RetryMetrics } from './retry.ts';
import { StatsAggregator } from './stats.ts';

const PROXIES = [
  '00000000-0000-4000-8000-00000000000a',
  '00000000-0000-4000-8000-00000000000b',
  '00000000-0000-4000-8000-00000000000c',
];
const FAILURES = ['target_error', 'proxy_error', 'timeout'] as const;

/** A call as the engine would report it: failed attempts, then a success on the last one when ok. */
const callArb: fc.Arbitrary<CallRecord> = fc
  .record({
    ok: fc.boolean(),
    tries: fc.array(
      fc.record({
        proxy: fc.integer({ min: 0, max: PROXIES.length - 1 }),
        fail: fc.constantFrom(...FAILURES),
        ms: fc.integer({ min: 1, max: 5000 }),
      }),
      { minLength: 0, maxLength: 4 },
    ),
  })
  .map(({ ok, tries }) => {
    const succeeded = ok && tries.length > 0;
    const attempts: AttemptRecord[] = tries.map((t, i) => ({
      proxyId: PROXIES[t.proxy]!,
      attempt: i + 1,
      outcome: succeeded && i === tries.length - 1 ? 'success' : t.fail,
      latencyMs: t.ms,
    }));
    const latencyMs = attempts.reduce((s, a) => s + a.latencyMs, 0) + 1;
    return succeeded
      ? { ok: true, latencyMs, attempts }
      : { ok: false, latencyMs, attempts, errorCode: 'X_FAILED' };
  });

const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

describe('stats, retry metrics and /metrics agree', () => {
  it('after N calls with K failures, every view reports N, K, the same retries and per-proxy counts', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(callArb, { maxLength: 60 }), async (calls) => {
        const now = () => Date.UTC(2025, 0, 1, 10, 0, 0);
        const stats = new StatsAggregator({ now });
        const retry = new RetryMetrics({ now, retentionHours: 24, breakerEventsCount: () => 0 });
        const prom = new PromMetrics({
          poolCounts: () => ({ total: 3, healthy: 3 }),
          breakerStates: () => [],
          defaultMetrics: false,
        });
        for (const c of calls) {
          stats.recordCall(c);
          retry.recordCall(c);
          prom.recordCall(c);
        }
        const n = calls.length;
        const k = calls.filter((c) => !c.ok).length;
        const retries = calls.reduce((s, c) => s + Math.max(0, c.attempts.length - 1), 0);
        const st = stats.snapshot();
        const sum = retry.summary();
        const ts = retry.timeseries(24);
        const bp = retry.byProxy(24);
        const s = parseSamples(await prom.render());

        assert.equal(st.requests_total, n);
        assert.ok(close(st.error_rate, n === 0 ? 0 : k / n));
        assert.equal(sumOf(s, 'rota_requests_proxied_total'), n);
        assert.equal(sumOf(s, 'rota_requests_proxied_total', { outcome: 'success' }), n - k);
        assert.equal(
          ts.reduce((a, h) => a + h.total_requests, 0),
          n,
        );
        assert.ok(
          close(
            ts.reduce((a, h) => a + h.success_rate * h.total_requests, 0),
            n - k,
          ),
        );

        assert.equal(sum.total_retries, retries);
        assert.equal(sumOf(s, 'rota_retries_total'), retries);
        assert.equal(
          Object.values(sum.success_by_attempt).reduce((a, b) => a + b, 0),
          n - k,
        );

        for (const p of st.proxy_stats) {
          // Failures are the proxy's own faults only.
          const own = (outcome: string) =>
            sumOf(s, 'rota_upstream_attempts_total', { proxy_id: p.proxy_id, outcome });
          assert.equal(p.failures, own('proxy_error') + own('timeout'));
          const r = bp[p.proxy_id]!;
          assert.equal(r.total_attempts, p.requests);
          assert.equal(r.success_count, p.successes);
          assert.equal(r.failure_count, p.failures);
          assert.ok(close(r.avg_latency * 1000, p.avg_latency_ms));
          assert.equal(sumOf(s, 'rota_upstream_attempts_total', { proxy_id: p.proxy_id }), p.requests);
          assert.equal(
            sumOf(s, 'rota_upstream_attempts_total', { proxy_id: p.proxy_id, outcome: 'success' }),
            p.successes,
          );
        }
        assert.equal(Object.keys(bp).length, st.proxy_stats.length);
        assert.equal(
          st.proxy_stats.reduce((a, p) => a + p.successes, 0),
          n - k,
        );
      }),
      { numRuns: 60 },
    );
  });
});
