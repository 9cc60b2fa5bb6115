import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { register as globalRegister } from 'prom-client';
import { parseSamples, seriesOf, sumOf } from '../../test/helpers/metrics.ts';
import type { CallRecord } from './calls.ts';
import { OVERFLOW_ENDPOINT, PromMetrics, type PromMetricsOptions, UNMATCHED_ENDPOINT } from './prometheus.ts';

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';

function metrics(o: Partial<PromMetricsOptions> = {}): PromMetrics {
  return new PromMetrics({
    poolCounts: () => ({ total: 0, healthy: 0 }),
    breakerStates: () => [],
    defaultMetrics: false,
    ...o,
  });
}

function retried(ok: boolean): CallRecord {
  return {
    ok,
    latencyMs: 700,
    errorCode: ok ? undefined : 'PROXY_FAILOVER_EXHAUSTED',
    attempts: [
      { proxyId: A, attempt: 1, outcome: 'proxy_error', latencyMs: 200, kind: 'connect' },
      { proxyId: B, attempt: 2, outcome: ok ? 'success' : 'timeout', latencyMs: 500 },
    ],
  };
}

async function samples(m: PromMetrics) {
  return parseSamples(await m.render());
}

describe('PromMetrics', () => {
  it('counts HTTP requests by route template, method and status, with a duration histogram', async () => {
    const m = metrics();
    m.observeHttp('/api/v1/proxies/:id', 'get', 200, 0.02);
    m.observeHttp('/api/v1/proxies/:id', 'GET', 200, 0.2);
    m.observeHttp('/api/v1/proxies/:id', 'GET', 404, 0.001);
    m.observeHttp('/api/v1/proxies', 'BREW', 405, 0.001);
    const s = await samples(m);
    assert.equal(
      sumOf(s, 'rota_requests_total', { endpoint: '/api/v1/proxies/:id', method: 'GET', status: '200' }),
      2,
    );
    assert.equal(sumOf(s, 'rota_requests_total', { status: '404' }), 1);
    assert.equal(sumOf(s, 'rota_requests_total', { method: 'OTHER' }), 1, 'unknown verbs share one label');
    const count = { endpoint: '/api/v1/proxies/:id', method: 'GET' };
    assert.equal(sumOf(s, 'rota_request_duration_seconds_count', count), 3);
    assert.ok(Math.abs(sumOf(s, 'rota_request_duration_seconds_sum', count) - 0.221) < 1e-9);
    assert.equal(sumOf(s, 'rota_request_duration_seconds_bucket', { ...count, le: '0.05' }), 2);
  });

  it('counts the same past the cap on remembered (route, method, status) keys', async () => {
    const m = metrics();
    // 60 routes x 7 methods x 11 statuses: 4,620 combinations, past the 4,096 whose keys are kept.
    const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
    for (let round = 0; round < 2; round++)
      for (let r = 0; r < 60; r++)
        for (const method of methods)
          for (let st = 200; st <= 210; st++) m.observeHttp(`/r${r}`, method, st, 0.001);
    const s = await samples(m);
    assert.equal(sumOf(s, 'rota_requests_total', {}), 2 * 60 * 7 * 11);
    assert.equal(sumOf(s, 'rota_requests_total', { endpoint: '/r59', method: 'OPTIONS', status: '210' }), 2);
    assert.equal(sumOf(s, 'rota_request_duration_seconds_count', { endpoint: '/r0', method: 'GET' }), 22);
  });

  it('adds no series for 10,000 distinct unmatched paths', async () => {
    const m = metrics();
    m.observeHttp('/api/v1/stats', 'GET', 200, 0.001);
    const before = (await samples(m)).length;
    for (let i = 0; i < 10_000; i++) {
      m.observeHttp(undefined, 'GET', 404, 0.001); // the route template of /nope/<i> is: none
      m.rateLimited(undefined);
    }
    const s = await samples(m);
    const unmatched = s.filter((x) => x.labels.endpoint === UNMATCHED_ENDPOINT);
    // One counter series, one histogram (buckets + sum + count) and one rate-limit series.
    const perHistogram = seriesOf(s, 'rota_request_duration_seconds_bucket').length / 2 + 2;
    assert.equal(unmatched.length, 1 + perHistogram + 1);
    assert.equal(s.length, before + unmatched.length);
    assert.equal(sumOf(s, 'rota_requests_total', { endpoint: UNMATCHED_ENDPOINT }), 10_000);
  });

  it('caps distinct endpoint labels even if a caller passed raw paths by mistake', async () => {
    const m = metrics({ maxEndpoints: 10 });
    for (let i = 0; i < 1000; i++) m.observeHttp(`/raw/${i}`, 'GET', 200, 0.001);
    const s = await samples(m);
    assert.equal(seriesOf(s, 'rota_requests_total').length, 11);
    assert.equal(sumOf(s, 'rota_requests_total', { endpoint: OVERFLOW_ENDPOINT }), 990);
  });

  it('records proxied calls, per-proxy attempts and latency, and retries', async () => {
    const m = metrics();
    m.recordCall(retried(true));
    m.recordCall(retried(false));
    m.recordCall({ ok: false, latencyMs: 1, errorCode: 'PROXY_POOL_EMPTY', attempts: [] });
    m.recordCall({ ok: false, latencyMs: 1, errorCode: 'not a code\n{x="y"}', attempts: [] });
    const s = await samples(m);
    assert.equal(sumOf(s, 'rota_requests_proxied_total', { outcome: 'success' }), 1);
    assert.equal(sumOf(s, 'rota_requests_proxied_total', { outcome: 'proxy_failover_exhausted' }), 1);
    assert.equal(sumOf(s, 'rota_requests_proxied_total', { outcome: 'proxy_pool_empty' }), 1);
    assert.equal(sumOf(s, 'rota_requests_proxied_total', { outcome: 'error' }), 1);
    assert.equal(sumOf(s, 'rota_retries_total'), 2);
    assert.equal(sumOf(s, 'rota_upstream_attempts_total', { proxy_id: A, outcome: 'proxy_error' }), 2);
    assert.equal(sumOf(s, 'rota_upstream_attempts_total', { proxy_id: B, outcome: 'success' }), 1);
    assert.equal(sumOf(s, 'rota_upstream_attempts_total', { proxy_id: B, outcome: 'timeout' }), 1);
    assert.equal(sumOf(s, 'rota_upstream_latency_seconds_count', { proxy_id: B }), 2);
    assert.ok(Math.abs(sumOf(s, 'rota_upstream_latency_seconds_sum', { proxy_id: A }) - 0.4) < 1e-9);
    assert.equal(sumOf(s, 'rota_rate_limit_rejections_total'), 0);
  });

  it('reads pool and breaker gauges from the callbacks at each scrape', async () => {
    let counts = { total: 3, healthy: 2 };
    let states: { proxyId: string; state: 'closed' | 'open' | 'half-open' }[] = [
      { proxyId: A, state: 'open' },
      { proxyId: B, state: 'half-open' },
    ];
    const m = metrics({ poolCounts: () => counts, breakerStates: () => states });
    let s = await samples(m);
    assert.equal(sumOf(s, 'rota_proxies_total'), 3);
    assert.equal(sumOf(s, 'rota_proxies_healthy'), 2);
    assert.equal(sumOf(s, 'rota_circuit_breaker_state', { proxy_id: A }), 1);
    assert.equal(sumOf(s, 'rota_circuit_breaker_state', { proxy_id: B }), 2);
    assert.deepEqual(
      seriesOf(s, 'rota_circuit_breakers').map((x) => [x.labels.state, x.value]),
      [
        ['closed', 0],
        ['open', 1],
        ['half-open', 1],
      ],
    );
    counts = { total: 1, healthy: 1 };
    states = [{ proxyId: B, state: 'closed' }];
    s = await samples(m);
    assert.equal(sumOf(s, 'rota_proxies_total'), 1);
    assert.deepEqual(
      seriesOf(s, 'rota_circuit_breaker_state').map((x) => [x.labels.proxy_id, x.value]),
      [[B, 0]],
    );
    assert.equal(sumOf(s, 'rota_circuit_breakers', { state: 'closed' }), 1);
    assert.equal(sumOf(s, 'rota_circuit_breakers', { state: 'open' }), 0);
  });

  it('removeProxy makes every series of that proxy disappear, and keeps it gone', async () => {
    const live = new Set([A, B]);
    const m = metrics({
      proxyExists: (id) => live.has(id),
      breakerStates: () => [...live].map((proxyId) => ({ proxyId, state: 'closed' as const })),
    });
    m.recordCall(retried(true));
    m.recordCall(retried(false));
    assert.ok((await m.render()).includes(A));
    live.delete(A);
    m.removeProxy(A);
    m.recordCall(retried(true)); // in flight when A was deleted
    const text = await m.render();
    assert.ok(!text.includes(A), 'no series mentions the deleted proxy');
    const s = parseSamples(text);
    assert.equal(sumOf(s, 'rota_upstream_attempts_total', { proxy_id: B }), 3);
    assert.equal(sumOf(s, 'rota_retries_total'), 3, 'global counters keep the history');
  });

  it('each outcome of a proxy is its own series; a proxy back under the same id counts from zero', async () => {
    const live = new Set([A]);
    const m = metrics({ proxyExists: (id) => live.has(id) });
    const outcomes = ['success', 'timeout', 'proxy_error', 'success'] as const;
    for (const [i, outcome] of outcomes.entries())
      m.recordAttempt({ proxyId: A, attempt: i + 1, outcome, latencyMs: 1 });
    m.recordAttempt({ proxyId: B, attempt: 1, outcome: 'success', latencyMs: 1 }); // B does not exist
    let s = await samples(m);
    assert.deepEqual(
      seriesOf(s, 'rota_upstream_attempts_total')
        .filter((x) => x.value > 0)
        .map((x) => [x.labels.proxy_id, x.labels.outcome, x.value])
        .sort(),
      [
        [A, 'proxy_error', 1],
        [A, 'success', 2],
        [A, 'timeout', 1],
      ],
    );
    live.delete(A);
    m.removeProxy(A);
    m.recordAttempt({ proxyId: A, attempt: 1, outcome: 'success', latencyMs: 1 });
    assert.ok(!(await m.render()).includes(A), 'gone while it does not exist');
    live.add(A);
    live.add(B);
    m.recordAttempt({ proxyId: A, attempt: 1, outcome: 'success', latencyMs: 1 });
    m.recordAttempt({ proxyId: B, attempt: 1, outcome: 'success', latencyMs: 1 });
    s = await samples(m);
    assert.equal(sumOf(s, 'rota_upstream_attempts_total', { proxy_id: A, outcome: 'success' }), 1);
    assert.equal(sumOf(s, 'rota_upstream_attempts_total', { proxy_id: A, outcome: 'timeout' }), 0);
    assert.equal(sumOf(s, 'rota_upstream_attempts_total', { proxy_id: B, outcome: 'success' }), 1);
  });

  it('uses a private registry and the Prometheus 0.0.4 content type', async () => {
    const m1 = metrics();
    const m2 = metrics();
    m1.observeHttp('/x', 'GET', 200, 0.01);
    assert.equal(sumOf(await samples(m2), 'rota_requests_total'), 0);
    assert.equal(globalRegister.getSingleMetric('rota_requests_total'), undefined);
    assert.equal(m1.contentType, 'text/plain; version=0.0.4; charset=utf-8');
  });

  it('adds process metrics with the rota_ prefix by default', async () => {
    const m = new PromMetrics({ poolCounts: () => ({ total: 0, healthy: 0 }), breakerStates: () => [] });
    const s = await samples(m);
    assert.ok(sumOf(s, 'rota_process_resident_memory_bytes') > 0);
    assert.ok(s.every((x) => x.name.startsWith('rota_')));
  });
});
