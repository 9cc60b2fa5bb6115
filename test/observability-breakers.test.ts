import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { RetryMetricsJson } from '../src/metrics/retry.ts';
import type { Clock } from '../src/services.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { type RawFixture, startResetter } from './fixtures/misbehaving.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { Api, injectTransport } from './helpers/api-contract.ts';
import { makeApp, type TestApp } from './helpers/app.ts';

/** Breaker endpoints, the `hours` windows and retention of the event and retry history. */

interface Breaker {
  proxy_id: string;
  state: string;
  failure_count: number;
  failure_threshold: number;
  window_duration: number;
  timeout_duration: number;
  next_test_time: string | null;
  last_state_change: string;
}
interface BreakerEvent {
  proxy_id: string;
  from_state: string;
  to_state: string;
  timestamp: string;
  failure_count: number;
  reason: string;
}

const HOUR_MS = 3_600_000;
const BASE = Date.UTC(2030, 0, 7, 10, 15);
let target: TargetServer;
let good: ForwardProxy;
let bad: RawFixture;
let t: TestApp;
let api: Api;
let g: string;
let r: string;
/** Wall-clock jumps: the breakers and the retry history live on wall time. */
let jumped = 0;

before(async () => {
  [target, good, bad] = await Promise.all([startTarget(), startForwardProxy(), startResetter()]);
  const t0 = performance.now();
  const clock: Clock = {
    now: () => BASE + jumped + (performance.now() - t0),
    monotonic: () => performance.now(),
  };
  t = await makeApp(
    {
      ROTA_SSRF_ALLOW: '127.0.0.0/8',
      ROTA_BREAKER_FAILURE_THRESHOLD: '2',
      ROTA_METRICS_RETENTION_HOURS: '3',
    },
    { clock },
  );
  api = await Api.over(injectTransport(t.app));
  const add = async (port: number) =>
    (await api.data<{ id: string }>('POST', '/proxies', { body: { url: `http://127.0.0.1:${port}` } })).id;
  g = await add(good.port);
  r = await add(bad.port);
  await api.data('PUT', '/retry/policy', { body: { base_delay: 0, max_attempts: 2 } });
});
after(async () => {
  await t.close();
  await Promise.all([target.close(), good.close(), bad.close()]);
});

const breaker = (id: string) =>
  api.data<Breaker>('GET', '/circuit-breakers/{proxy_id}', { params: { proxy_id: id } });
const events = (hours?: number) =>
  api.data<BreakerEvent[]>(
    'GET',
    '/circuit-breakers/metrics',
    hours === undefined ? {} : { query: { hours } },
  );
const brief = (e: BreakerEvent) => [e.proxy_id, e.from_state, e.to_state, e.reason];

/** Calls until the bad proxy's breaker is open; every call still succeeds through the good proxy. */
async function openBad(): Promise<void> {
  for (let i = 0; i < 6 && (await breaker(r)).state !== 'open'; i++) {
    await api.data('POST', '/request', { body: { url: `${target.origin}/json` } });
  }
  assert.equal((await breaker(r)).state, 'open');
}

describe('circuit breaker endpoints', () => {
  it('list every proxy breaker, closed, with the configured settings', async () => {
    const all = await api.data<Breaker[]>('GET', '/circuit-breakers');
    assert.deepEqual(
      all.map((b) => b.proxy_id),
      [g, r],
    );
    for (const b of all) {
      assert.deepEqual(
        [
          b.state,
          b.failure_count,
          b.failure_threshold,
          b.window_duration,
          b.timeout_duration,
          b.next_test_time,
        ],
        ['closed', 0, 2, 60, 30, null],
      );
      assert.ok(Date.parse(b.last_state_change) >= BASE);
    }
    assert.deepEqual(await breaker(g), all[0]);
  });

  it('404 PROXY_NOT_FOUND for an unknown id on GET and reset; 422 for an over-long one', async () => {
    for (const id of ['nope', randomUUID()]) {
      for (const [method, template] of [
        ['GET', '/circuit-breakers/{proxy_id}'],
        ['POST', '/circuit-breakers/{proxy_id}/reset'],
      ] as const) {
        const res = await api.call(method, template, { params: { proxy_id: id } });
        assert.equal(res.status, 404, res.text);
        assert.equal((res.json as { error: { code: string } }).error.code, 'PROXY_NOT_FOUND');
      }
    }
    const long = await api.call('GET', '/circuit-breakers/{proxy_id}', {
      params: { proxy_id: 'x'.repeat(65) },
    });
    assert.equal(long.status, 422);
  });

  it('opens after the threshold: state, next_test_time and one threshold event', async () => {
    await openBad();
    const b = await breaker(r);
    assert.equal(b.failure_count, 2);
    assert.equal(Date.parse(b.next_test_time ?? ''), Date.parse(b.last_state_change) + 30_000);
    assert.deepEqual((await events()).map(brief), [[r, 'closed', 'open', 'threshold']]);
    assert.equal((await events())[0]?.failure_count, 2);
  });

  it('reset closes it at once and is an event, even from closed', async () => {
    const res = await api.data<Breaker>('POST', '/circuit-breakers/{proxy_id}/reset', {
      params: { proxy_id: r },
    });
    assert.deepEqual([res.state, res.failure_count, res.next_test_time], ['closed', 0, null]);
    assert.deepEqual(await breaker(r), res);
    await api.data('POST', '/circuit-breakers/{proxy_id}/reset', { params: { proxy_id: g } });
    assert.deepEqual((await events()).map(brief), [
      [r, 'closed', 'open', 'threshold'],
      [r, 'open', 'closed', 'manual_reset'],
      [g, 'closed', 'closed', 'manual_reset'],
    ]);
    const summary = await api.data<RetryMetricsJson['summary']>('GET', '/metrics/retries');
    assert.equal(summary.circuit_breaker_events_count, 3);
  });
});

describe('hours windows and retention (ROTA_METRICS_RETENTION_HOURS=3)', () => {
  it('events: hours keeps only the recent ones; /metrics/circuit-breaker agrees', async () => {
    jumped += 2 * HOUR_MS;
    await openBad();
    const recent = await events(1);
    assert.deepEqual(recent.map(brief), [[r, 'closed', 'open', 'threshold']]);
    assert.equal((await events(3)).length, 4);
    assert.equal((await events(720)).length, 4);
    const root = (await api.rootJson('/metrics/circuit-breaker', 1)).json as {
      data: { events: BreakerEvent[]; total_events: number; hours: number };
    };
    assert.deepEqual([root.data.events, root.data.total_events, root.data.hours], [recent, 1, 1]);
  });

  it('an open breaker is reported half-open once its timeout has passed, with the event', async () => {
    jumped += 31_000;
    const b = await breaker(r);
    assert.equal(b.state, 'half-open');
    assert.ok(
      Date.parse(b.next_test_time ?? '') <= Date.parse(b.last_state_change),
      'a trial is allowed now',
    );
    assert.deepEqual((await events(1)).map(brief).at(-1), [r, 'open', 'half-open', 'timeout_elapsed']);
    const res = await t.app.inject({ url: '/metrics' });
    assert.match(res.body, new RegExp(`^rota_circuit_breaker_state\\{proxy_id="${r}"\\} 2$`, 'm'));
  });

  it('retry time series: one bucket per hour with calls, filtered by hours', async () => {
    const all = await api.data<RetryMetricsJson['timeseries']>('GET', '/metrics/retries/timeseries');
    assert.deepEqual(
      all.map((h) => h.timestamp),
      [new Date(Date.UTC(2030, 0, 7, 10)).toISOString(), new Date(Date.UTC(2030, 0, 7, 12)).toISOString()],
    );
    const last = await api.data<RetryMetricsJson['timeseries']>('GET', '/metrics/retries/timeseries', {
      query: { hours: 1 },
    });
    assert.deepEqual(last, all.slice(1));
    const byHour = await api.data<RetryMetricsJson['by_proxy']>('GET', '/metrics/retries/by-proxy', {
      query: { hours: 1 },
    });
    const whole = await api.data<RetryMetricsJson['by_proxy']>('GET', '/metrics/retries/by-proxy');
    assert.equal(byHour[r]?.failure_count, 2, 'the second opening only');
    assert.equal(whole[r]?.failure_count, 4);
    assert.equal(whole[r]?.circuit_breaker_opens, 2);
    const total = all.reduce((n, h) => n + h.total_retries, 0);
    assert.equal(
      (await api.data<RetryMetricsJson['summary']>('GET', '/metrics/retries')).total_retries,
      total,
    );
  });

  it('history older than the retention is forgotten', async () => {
    jumped += 2 * HOUR_MS; // the first hour is now 4 h old, beyond the 3 h kept
    await api.data('POST', '/circuit-breakers/{proxy_id}/reset', { params: { proxy_id: r } });
    await api.data('POST', '/request', { body: { url: `${target.origin}/json` } });
    const series = await api.data<RetryMetricsJson['timeseries']>('GET', '/metrics/retries/timeseries', {
      query: { hours: 720 },
    });
    assert.deepEqual(
      series.map((h) => h.timestamp),
      [new Date(Date.UTC(2030, 0, 7, 12)).toISOString(), new Date(Date.UTC(2030, 0, 7, 14)).toISOString()],
    );
    assert.ok(t.services.retryMetrics.bucketCount <= 3, 'memory holds the retention window only');
    const summary = await api.data<RetryMetricsJson['summary']>('GET', '/metrics/retries');
    assert.equal(summary.retention_hours, 3);
    assert.equal(
      summary.total_retries,
      series.reduce((n, h) => n + h.total_retries, 0),
    );
    const kept = await events(720);
    assert.ok(
      kept.every((e) => Date.parse(e.timestamp) >= BASE + jumped - 3 * HOUR_MS),
      'old events dropped',
    );
    assert.equal(summary.circuit_breaker_events_count, kept.length);
  });

  it('hours outside 1-720 or not an integer is 422 on every endpoint that takes it', async () => {
    const paths = ['/circuit-breakers/metrics', '/metrics/retries/timeseries', '/metrics/retries/by-proxy'];
    for (const hours of ['0', '721', 'abc', '1.5', '-1', '']) {
      for (const path of paths) {
        const res = await api.call('GET', path, { query: { hours } });
        assert.equal(res.status, 422, `${path}?hours=${hours}: ${res.text}`);
        const body = res.json as { error: { code: string }; detail: { loc: string[] }[] };
        assert.equal(body.error.code, 'VALIDATION_ERROR');
        assert.deepEqual(body.detail[0]?.loc, ['query', 'hours']);
      }
      for (const path of ['/metrics/retry', '/metrics/circuit-breaker']) {
        const res = await t.app.inject({ url: `${path}?hours=${hours}` });
        assert.equal(res.statusCode, 422, `${path}?hours=${hours}`);
        // Not in the document (unversioned): held to the same error envelope as the /api/v1 routes.
        api.contract.check('GET', '/api/v1/circuit-breakers/metrics', 422, res.json());
      }
    }
  });

  it('a deleted proxy has no breaker any more', async () => {
    const res = await api.call('DELETE', '/proxies/{proxy_id}', { params: { proxy_id: r } });
    assert.equal(res.status, 204);
    assert.equal(
      (await api.call('GET', '/circuit-breakers/{proxy_id}', { params: { proxy_id: r } })).status,
      404,
    );
    assert.deepEqual(
      (await api.data<Breaker[]>('GET', '/circuit-breakers')).map((b) => b.proxy_id),
      [g],
    );
  });
});
