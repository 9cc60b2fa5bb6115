import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ACCEPTED_LINT, parseSamples, promtoolCheck, sumOf } from '../../test/helpers/metrics.ts';
import type { CallRecord } from './calls.ts';
import {
  type BreakerMetricsInput,
  escapeLabelValue,
  formatValue,
  renderBreakerMetrics,
  renderFamilies,
  renderRetryMetrics,
} from './exposition.ts';
import { PromMetrics } from './prometheus.ts';
import { RetryMetrics } from './retry.ts';

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';
const T0 = Date.UTC(2025, 0, 1, 10, 30, 0);

function call(ok: boolean): CallRecord {
  return {
    ok,
    latencyMs: 900,
    errorCode: ok ? undefined : 'PROXY_FAILOVER_EXHAUSTED',
    attempts: [
      { proxyId: A, attempt: 1, outcome: 'proxy_error', latencyMs: 300 },
      { proxyId: B, attempt: 2, outcome: ok ? 'success' : 'target_error', latencyMs: 600 },
    ],
  };
}

function breakerData(): BreakerMetricsInput {
  return {
    states: [
      {
        proxy_id: A,
        state: 'open',
        failure_count: 5,
        failure_threshold: 5,
        window_duration: 60,
        timeout_duration: 30,
        next_test_time: '2025-01-01T10:31:00.000Z',
        last_state_change: '2025-01-01T10:30:30.000Z',
      },
      {
        proxy_id: B,
        state: 'closed',
        failure_count: 0,
        failure_threshold: 5,
        window_duration: 60,
        timeout_duration: 30,
        next_test_time: null,
        last_state_change: T0,
      },
    ],
    events: [
      { proxy_id: A, from_state: 'closed', to_state: 'open' },
      { proxy_id: A, from_state: 'open', to_state: 'half-open' },
      { proxy_id: A, from_state: 'half-open', to_state: 'open' },
      { proxy_id: A, from_state: 'closed', to_state: 'open' },
    ],
    total_events: 4,
    hours: 24,
  };
}

describe('Prometheus text validated by promtool', () => {
  it('/metrics parses, and its only lint findings are the unavoidable spec and prom-client names', async () => {
    const m = new PromMetrics({
      poolCounts: () => ({ total: 2, healthy: 1 }),
      breakerStates: () => [{ proxyId: A, state: 'half-open' }],
    });
    m.observeHttp('/api/v1/proxies/:id', 'GET', 200, 0.01);
    m.observeHttp(undefined, 'GET', 404, 0.002);
    m.rateLimited('/api/v1/request');
    m.recordCall(call(true));
    m.recordCall(call(false));
    const r = promtoolCheck(await m.render());
    assert.ok(r.status === 0 || r.status === 3, `promtool could not parse /metrics:\n${r.output}`);
    const unexpected = r.problems.filter((p) => !ACCEPTED_LINT.has(p));
    assert.deepEqual(unexpected, [], r.output);
  });

  it('retry metrics text is clean, with values equal to the JSON', () => {
    const c = { t: T0 };
    const rm = new RetryMetrics({ now: () => c.t, retentionHours: 24, breakerEventsCount: () => 4 });
    rm.recordCall(call(true));
    rm.recordCall(call(false));
    rm.recordBreakerOpen(A);
    c.t += 3_600_000;
    rm.recordCall({
      ok: true,
      latencyMs: 100,
      attempts: [{ proxyId: B, attempt: 1, outcome: 'success', latencyMs: 100 }],
    });
    const data = rm.report(24);
    const text = renderRetryMetrics(data, 24);
    const r = promtoolCheck(text);
    assert.equal(r.status, 0, r.output);
    const s = parseSamples(text);
    assert.equal(sumOf(s, 'rota_retry_retries'), data.summary.total_retries);
    assert.equal(sumOf(s, 'rota_retry_successful_calls', { attempt: '2' }), 1);
    assert.equal(sumOf(s, 'rota_retry_successful_calls', { attempt: '1' }), 1);
    assert.equal(sumOf(s, 'rota_retry_retention_seconds'), 24 * 3600);
    assert.equal(sumOf(s, 'rota_retry_hour_requests', { hour: '2025-01-01T10:00:00.000Z' }), 2);
    assert.equal(sumOf(s, 'rota_retry_hour_success_ratio', { hour: '2025-01-01T10:00:00.000Z' }), 0.5);
    assert.equal(sumOf(s, 'rota_retry_proxy_attempts', { proxy_id: B }), 3);
    assert.equal(sumOf(s, 'rota_retry_proxy_circuit_breaker_opens', { proxy_id: A }), 1);
    assert.equal(sumOf(s, 'rota_retry_proxy_latency_seconds', { proxy_id: A }), 0.3);
  });

  it('circuit breaker metrics text is clean, with states, times and transitions', () => {
    const text = renderBreakerMetrics(breakerData());
    const r = promtoolCheck(text);
    assert.equal(r.status, 0, r.output);
    const s = parseSamples(text);
    assert.equal(sumOf(s, 'rota_circuit_breaker_state', { proxy_id: A }), 1);
    assert.equal(sumOf(s, 'rota_circuit_breaker_state', { proxy_id: B }), 0);
    assert.equal(
      sumOf(s, 'rota_circuit_breaker_next_test_timestamp_seconds', { proxy_id: A }),
      T0 / 1000 + 60,
    );
    assert.ok(!text.includes(`rota_circuit_breaker_next_test_timestamp_seconds{proxy_id="${B}"}`));
    assert.equal(
      sumOf(s, 'rota_circuit_breaker_last_state_change_timestamp_seconds', { proxy_id: B }),
      T0 / 1000,
    );
    assert.equal(sumOf(s, 'rota_circuit_breaker_events'), 4);
    assert.equal(sumOf(s, 'rota_circuit_breaker_transitions', { from_state: 'closed', to_state: 'open' }), 2);
    assert.equal(sumOf(s, 'rota_circuit_breaker_transitions'), 4);
  });

  it('empty data still renders valid text', () => {
    const rm = new RetryMetrics({ now: () => T0, retentionHours: 1, breakerEventsCount: () => 0 });
    assert.equal(promtoolCheck(renderRetryMetrics(rm.report(1), 1)).status, 0);
    const empty = renderBreakerMetrics({ states: [], events: [], total_events: 0, hours: 1 });
    assert.equal(promtoolCheck(empty).status, 0);
  });

  it('escapes hostile label values so the text stays valid and round-trips', () => {
    const hostile = 'a"b\\c\nd}e,f="g"';
    const data = breakerData();
    const text = renderBreakerMetrics({
      ...data,
      states: data.states.map((b) => ({ ...b, proxy_id: hostile })),
      events: [{ proxy_id: hostile, from_state: 'closed', to_state: 'open' }],
    });
    assert.equal(promtoolCheck(text).status, 0, text);
    const s = parseSamples(text);
    assert.equal(sumOf(s, 'rota_circuit_breaker_transitions', { proxy_id: hostile }), 1);
  });

  it('promtool rejects broken text (the check is real)', () => {
    const r = promtoolCheck('# TYPE x gauge\nx{a="unterminated} 1\n');
    assert.notEqual(r.status, 0);
    assert.notEqual(r.status, 3);
  });
});

describe('exposition primitives', () => {
  it('escapes backslash, double quote and newline in label values', () => {
    assert.equal(escapeLabelValue('a\\b"c\nd'), 'a\\\\b\\"c\\nd');
  });

  it('formats special float values the way Prometheus reads them', () => {
    assert.equal(formatValue(Number.NaN), 'NaN');
    assert.equal(formatValue(Number.POSITIVE_INFINITY), '+Inf');
    assert.equal(formatValue(Number.NEGATIVE_INFINITY), '-Inf');
    assert.equal(formatValue(0.25), '0.25');
  });

  it('writes HELP and TYPE before the samples of each family', () => {
    const text = renderFamilies([
      {
        name: 'rota_x',
        help: 'line\nbreak \\ here',
        type: 'counter',
        samples: [{ value: 2, labels: { k: 'v' } }],
      },
    ]);
    assert.equal(text, '# HELP rota_x line\\nbreak \\\\ here\n# TYPE rota_x counter\nrota_x{k="v"} 2\n');
  });
});
