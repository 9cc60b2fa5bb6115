import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RetryMetricsJson } from '../src/metrics/retry.ts';
import type { StatsJson } from '../src/metrics/stats.ts';
import type { Clock } from '../src/services.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { type RawFixture, startResetter } from './fixtures/misbehaving.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { Api, injectTransport, type Reply } from './helpers/api-contract.ts';
import { makeApp, type TestApp } from './helpers/app.ts';
import {
  assertPromtoolAccepts,
  type ParsedSample,
  parseSamples,
  promtoolCheck,
  sumOf,
} from './helpers/metrics.ts';

/**
 * N proxied calls through real fixture proxies, K of the attempts failing: stats, retry metrics, breaker
 * events and the Prometheus counters must all agree with each other and with what the client saw.
 */

interface Breaker {
  proxy_id: string;
  state: string;
  failure_count: number;
}
interface BreakerEvent {
  proxy_id: string;
  from_state: string;
  to_state: string;
  failure_count: number;
}
interface CallSeen {
  status: number;
  attempts: number;
  code?: string | undefined;
  text?: string;
}

// Mid-hour, so that every call of the test falls into one hourly bucket.
const HOUR = Date.UTC(2030, 0, 7, 10);
const THRESHOLD = 3;
const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

let target: TargetServer;
let a: ForwardProxy;
let b: ForwardProxy;
let bad: RawFixture;
let t: TestApp;
let api: Api;
const ids: string[] = [];
const calls: CallSeen[] = [];

before(async () => {
  [target, a, b, bad] = await Promise.all([
    startTarget(),
    startForwardProxy(),
    startForwardProxy(),
    startResetter(),
  ]);
  const t0 = performance.now();
  const clock: Clock = {
    now: () => HOUR + 20 * 60_000 + (performance.now() - t0),
    monotonic: () => performance.now(),
  };
  t = await makeApp(
    { ROTA_SSRF_ALLOW: '127.0.0.0/8', ROTA_BREAKER_FAILURE_THRESHOLD: String(THRESHOLD) },
    { clock, processMetrics: true },
  );
  api = await Api.over(injectTransport(t.app));
  for (const p of [a, b, bad]) {
    ids.push(
      (await api.data<{ id: string }>('POST', '/proxies', { body: { url: `http://127.0.0.1:${p.port}` } }))
        .id,
    );
  }
  await api.data('PUT', '/retry/policy', { body: { base_delay: 0 } });
  // Phase 1: one attempt per call, so a call that starts on the resetting proxy fails.
  await api.data('PUT', '/config', { body: { max_retries: 1, rotation_strategy: 'round-robin' } });
  for (let i = 0; i < 6; i++) calls.push(await call());
  // Phase 2: failover allowed; the resetting proxy's third failure opens its breaker.
  await api.data('PUT', '/config', { body: { max_retries: 3 } });
  for (let i = 0; i < 6; i++) calls.push(await call());
});
after(async () => {
  await t.close();
  await Promise.all([target.close(), a.close(), b.close(), bad.close()]);
});

/** Records what the client got; the first test judges it, so that a surprise is reported in full. */
async function call(): Promise<CallSeen> {
  const r: Reply = await api.call('POST', '/request', { body: { url: `${target.origin}/json` } });
  if (r.status === 200)
    return { status: 200, attempts: (r.json as { data: { attempts: number } }).data.attempts };
  const e = (r.json as { error?: { code: string; details?: { attempts?: unknown[] } } }).error;
  return { status: r.status, attempts: e?.details?.attempts?.length ?? 0, code: e?.code, text: r.text };
}

/** What the client saw: the reference every aggregate is checked against. */
function seen() {
  const n = calls.length;
  const failedCalls = calls.filter((c) => c.status !== 200).length;
  const attempts = calls.reduce((s, c) => s + c.attempts, 0);
  const retries = calls.reduce((s, c) => s + c.attempts - 1, 0);
  const byAttempt: Record<string, number> = {};
  for (const c of calls.filter((x) => x.status === 200))
    byAttempt[c.attempts] = (byAttempt[c.attempts] ?? 0) + 1;
  return { n, failedCalls, attempts, retries, byAttempt, failedAttempts: attempts - (n - failedCalls) };
}

async function prom(url: string): Promise<{ text: string; samples: ParsedSample[] }> {
  const res = await t.app.inject({ url });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  return { text: res.body, samples: parseSamples(res.body) };
}

describe('after N calls with K failed attempts, every view agrees', () => {
  it('the scenario is what the fixtures saw: K failures on the resetting proxy, one retry', () => {
    const failures = calls.filter((c) => c.status !== 200);
    for (const f of failures) assert.deepEqual([f.status, f.code], [502, 'PROXY_FAILOVER_EXHAUSTED'], f.text);
    const s = seen();
    assert.equal(s.n, 12);
    assert.equal(s.failedCalls, 2, 'round-robin over three: one call in three starts on the bad proxy');
    assert.equal(s.failedAttempts, THRESHOLD, 'then its breaker opened and it was no longer tried');
    assert.equal(s.retries, 1);
    assert.equal(bad.connections, s.failedAttempts);
    assert.equal(a.requests.length + b.requests.length, s.n - s.failedCalls);
    assert.equal(target.count('GET', '/json'), s.n - s.failedCalls);
  });

  it('stats', async () => {
    const s = seen();
    const st = await api.data<StatsJson>('GET', '/stats');
    assert.equal(st.requests_total, s.n);
    assert.equal(st.requests_per_second, s.n / 60);
    assert.equal(st.error_rate, s.failedCalls / s.n);
    assert.ok(st.avg_latency_ms > 0);
    assert.deepEqual(st.proxy_stats.map((p) => p.proxy_id).sort(), [...ids].sort());
    for (const p of st.proxy_stats) assert.equal(p.successes + p.failures, p.requests, p.proxy_id);
    assert.equal(
      st.proxy_stats.reduce((x, p) => x + p.requests, 0),
      s.attempts,
    );
    const badStats = st.proxy_stats.find((p) => p.proxy_id === ids[2]);
    assert.deepEqual([badStats?.requests, badStats?.failures], [s.failedAttempts, s.failedAttempts]);
    for (const id of ids) {
      const record = await api.data<{ stats: { total_requests: number; failed_requests: number } }>(
        'GET',
        '/proxies/{proxy_id}',
        { params: { proxy_id: id } },
      );
      const p = st.proxy_stats.find((x) => x.proxy_id === id);
      assert.equal(record.stats.total_requests, p?.requests, `proxy record of ${id}`);
      assert.equal(record.stats.failed_requests, p?.failures, `proxy record of ${id}`);
    }
  });

  it('retry metrics: summary, time series and per proxy, in every form', async () => {
    const s = seen();
    const st = await api.data<StatsJson>('GET', '/stats');
    const summary = await api.data<RetryMetricsJson['summary']>('GET', '/metrics/retries');
    assert.deepEqual(summary, {
      total_retries: s.retries,
      success_by_attempt: s.byAttempt,
      circuit_breaker_events_count: 1,
      ban_events_count: 0,
      retention_hours: 24,
    });
    const series = await api.data<RetryMetricsJson['timeseries']>('GET', '/metrics/retries/timeseries');
    assert.equal(series.length, 1);
    const h = series[0]!;
    assert.equal(h.timestamp, new Date(HOUR).toISOString());
    assert.deepEqual([h.total_requests, h.total_retries], [s.n, s.retries]);
    assert.equal(h.success_rate, (s.n - s.failedCalls) / s.n);
    assert.ok(
      close(h.avg_latency * 1000, st.avg_latency_ms),
      `${h.avg_latency} s vs ${st.avg_latency_ms} ms`,
    );
    const byProxy = await api.data<RetryMetricsJson['by_proxy']>('GET', '/metrics/retries/by-proxy');
    assert.deepEqual(Object.keys(byProxy).sort(), [...ids].sort());
    for (const p of st.proxy_stats) {
      const r = byProxy[p.proxy_id]!;
      assert.deepEqual(
        [r.total_attempts, r.success_count, r.failure_count, r.circuit_breaker_opens],
        [p.requests, p.successes, p.failures, p.proxy_id === ids[2] ? 1 : 0],
      );
      assert.ok(close(r.avg_latency * 1000, p.avg_latency_ms));
    }
    const whole = (await api.rootJson('/metrics/retry')).json as { data: RetryMetricsJson };
    assert.deepEqual(whole.data, { summary, timeseries: series, by_proxy: byProxy });
  });

  it('breakers: the bad proxy is open after K failures, one event says so', async () => {
    const states = await api.data<Breaker[]>('GET', '/circuit-breakers');
    assert.deepEqual(
      states.map((x) => [x.proxy_id, x.state, x.failure_count]),
      [
        [ids[0], 'closed', 0],
        [ids[1], 'closed', 0],
        [ids[2], 'open', THRESHOLD],
      ],
    );
    const events = await api.data<BreakerEvent[]>('GET', '/circuit-breakers/metrics');
    assert.deepEqual(
      events.map((e) => [e.proxy_id, e.from_state, e.to_state, e.failure_count]),
      [[ids[2], 'closed', 'open', THRESHOLD]],
    );
    const whole = (await api.rootJson('/metrics/circuit-breaker')).json as {
      data: { states: Breaker[]; events: BreakerEvent[]; total_events: number; hours: number };
    };
    assert.deepEqual(whole.data, { states, events, total_events: 1, hours: 24 });
  });

  it('/metrics counters equal the JSON figures', async () => {
    const s = seen();
    const st = await api.data<StatsJson>('GET', '/stats');
    const { samples } = await prom('/metrics');
    const ep = { endpoint: '/api/v1/request', method: 'POST' };
    assert.equal(sumOf(samples, 'rota_requests_total', { ...ep, status: '200' }), s.n - s.failedCalls);
    assert.equal(sumOf(samples, 'rota_requests_total', { ...ep, status: '502' }), s.failedCalls);
    assert.equal(sumOf(samples, 'rota_request_duration_seconds_count', ep), s.n);
    assert.equal(sumOf(samples, 'rota_retries_total'), s.retries);
    assert.equal(sumOf(samples, 'rota_requests_proxied_total'), s.n);
    assert.equal(sumOf(samples, 'rota_requests_proxied_total', { outcome: 'success' }), s.n - s.failedCalls);
    assert.equal(sumOf(samples, 'rota_proxies_total'), 3);
    assert.equal(sumOf(samples, 'rota_proxies_healthy'), 2);
    for (const p of st.proxy_stats) {
      const id = { proxy_id: p.proxy_id };
      assert.equal(sumOf(samples, 'rota_upstream_attempts_total', id), p.requests);
      assert.equal(
        sumOf(samples, 'rota_upstream_attempts_total', { ...id, outcome: 'success' }),
        p.successes,
      );
      assert.equal(sumOf(samples, 'rota_upstream_latency_seconds_count', id), p.requests);
      const sum = sumOf(samples, 'rota_upstream_latency_seconds_sum', id);
      assert.ok(Math.abs(sum * 1000 - p.avg_latency_ms * p.requests) < 1e-6, p.proxy_id);
      assert.equal(sumOf(samples, 'rota_circuit_breaker_state', id), p.proxy_id === ids[2] ? 1 : 0);
    }
    assert.equal(
      sumOf(samples, 'rota_upstream_attempts_total', { outcome: 'proxy_error' }),
      s.failedAttempts,
    );
  });

  it('the Prometheus forms of retry and breaker metrics carry the same numbers', async () => {
    const s = seen();
    const retry = (await prom('/metrics/retry?format=prometheus')).samples;
    assert.equal(sumOf(retry, 'rota_retry_retries'), s.retries);
    for (const [n, c] of Object.entries(s.byAttempt)) {
      assert.equal(sumOf(retry, 'rota_retry_successful_calls', { attempt: n }), c);
    }
    assert.equal(sumOf(retry, 'rota_retry_hour_requests'), s.n);
    assert.equal(sumOf(retry, 'rota_retry_proxy_attempts'), s.attempts);
    assert.equal(sumOf(retry, 'rota_retry_proxy_failures', { proxy_id: ids[2]! }), s.failedAttempts);
    assert.equal(sumOf(retry, 'rota_retry_proxy_circuit_breaker_opens'), 1);
    const cb = (await prom('/metrics/circuit-breaker?format=prometheus')).samples;
    assert.equal(sumOf(cb, 'rota_circuit_breaker_state'), 1);
    assert.equal(sumOf(cb, 'rota_circuit_breaker_events'), 1);
    assert.equal(
      sumOf(cb, 'rota_circuit_breaker_transitions', {
        proxy_id: ids[2]!,
        from_state: 'closed',
        to_state: 'open',
      }),
      1,
    );
  });

  it('rotate is not a request: selecting without sending moves no figure', async () => {
    const figures = async () => [
      await api.data('GET', '/stats'),
      (await api.rootJson('/metrics/retry')).json as { data: unknown },
      sumOf((await prom('/metrics')).samples, 'rota_upstream_attempts_total'),
    ];
    const [stats, retry, attempts] = await figures();
    for (let i = 0; i < 5; i++) await api.data('GET', '/rotate');
    const [stats2, retry2, attempts2] = await figures();
    assert.deepEqual(stats2, stats);
    assert.deepEqual((retry2 as { data: unknown }).data, (retry as { data: unknown }).data);
    assert.equal(attempts2, attempts);
  });

  it('promtool accepts all three texts, with process metrics and real traffic in them', async () => {
    // /metrics carries the gauge rota_proxies_total: only that kind of lint finding is tolerated.
    assertPromtoolAccepts((await prom('/metrics')).text, '/metrics');
    for (const url of ['/metrics/retry?format=prometheus', '/metrics/circuit-breaker?format=prometheus']) {
      const r = promtoolCheck((await prom(url)).text);
      assert.equal(r.status, 0, `${url}:\n${r.output}`);
      assert.deepEqual(r.problems, [], url);
    }
    const { samples } = await prom('/metrics');
    assert.ok(sumOf(samples, 'rota_process_cpu_seconds_total') > 0, 'process metrics are exposed');
    assert.ok(sumOf(samples, 'rota_nodejs_heap_size_used_bytes') > 0);
  });
});
