import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { RetryMetricsJson } from '../src/metrics/retry.ts';
import type { StatsJson } from '../src/metrics/stats.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { Api, injectTransport } from './helpers/api-contract.ts';
import { makeApp, type TestApp } from './helpers/app.ts';
import { assertPromtoolAccepts, type ParsedSample, parseSamples, sumOf } from './helpers/metrics.ts';

/** /metrics: format, aliases, bounded label sets, and series that leave with their proxy. */

const SECRET = 'Pr0xy-Pa55word-XYZ';
let target: TargetServer;
let p1: ForwardProxy;
let p2: ForwardProxy;
let t: TestApp;
let api: Api;

before(async () => {
  [target, p1, p2] = await Promise.all([
    startTarget(),
    startForwardProxy(),
    startForwardProxy({ auth: { username: 'bob', password: SECRET } }),
  ]);
  t = await makeApp({ ROTA_SSRF_ALLOW: '127.0.0.0/8' }, { processMetrics: true });
  api = await Api.over(injectTransport(t.app));
});
after(async () => {
  await t.close();
  await Promise.all([target.close(), p1.close(), p2.close()]);
});

async function scrape(url = '/metrics'): Promise<{ text: string; samples: ParsedSample[]; type: string }> {
  const res = await t.app.inject({ url });
  assert.equal(res.statusCode, 200, url);
  return { text: res.body, samples: parseSamples(res.body), type: String(res.headers['content-type']) };
}

/** Series identity: name plus sorted labels. */
const seriesKeys = (samples: ParsedSample[]) =>
  new Set(samples.map((s) => `${s.name}{${Object.entries(s.labels).sort().join(',')}}`));

describe('/metrics', () => {
  it('is Prometheus text 0.0.4 that promtool parses, with the five REST metrics and process ones', async () => {
    const { text, samples, type } = await scrape();
    assert.match(type, /^text\/plain; version=0\.0\.4/);
    assertPromtoolAccepts(text, '/metrics');
    for (const family of [
      'rota_requests_total',
      'rota_request_duration_seconds',
      'rota_proxies_total',
      'rota_proxies_healthy',
      'rota_circuit_breaker_state',
      'rota_upstream_attempts_total',
      'rota_upstream_latency_seconds',
      'rota_retries_total',
      'rota_rate_limit_rejections_total',
      'rota_process_cpu_seconds_total',
      'rota_nodejs_handles_active',
      'rota_nodejs_requests_active',
      'rota_nodejs_resources_active',
    ]) {
      assert.match(text, new RegExp(`^# TYPE ${family} `, 'm'), family);
    }
    assert.equal(sumOf(samples, 'rota_proxies_total'), 0);
  });

  it('is also served at /api/metrics and /api/v1/metrics, under one endpoint label', async () => {
    const families = (text: string) => [...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]).sort();
    const base = families((await scrape()).text);
    for (const alias of ['/api/metrics', '/api/v1/metrics', '/api/v1/metrics?x=1']) {
      const { text, type } = await scrape(alias);
      assert.match(type, /^text\/plain; version=0\.0\.4/);
      assert.deepEqual(families(text), base, alias);
    }
    const { samples } = await scrape();
    const endpoints = new Set(
      samples.filter((s) => s.name === 'rota_requests_total').map((s) => s.labels.endpoint),
    );
    assert.ok(endpoints.has('/metrics'));
    assert.ok(![...endpoints].some((e) => e?.startsWith('/api/metrics') || e === '/api/v1/metrics'));
    // The JSON metrics routes under the prefix are not swallowed by the alias.
    assert.equal((await api.call('GET', '/metrics/retries')).status, 200);
    const doc = (await t.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, unknown> };
    assert.ok(!Object.keys(doc.paths).some((p) => p === '/metrics' || p.endsWith('/v1/metrics')));
  });

  it('10,000 distinct unknown paths and unknown ids add no series', async () => {
    await t.app.inject({ url: '/no/such/path/warm-up' });
    await api.call('GET', '/proxies/{proxy_id}', { params: { proxy_id: randomUUID() } });
    await api.call('GET', '/circuit-breakers/{proxy_id}', { params: { proxy_id: randomUUID() } });
    await api.call('POST', '/circuit-breakers/{proxy_id}/reset', { params: { proxy_id: randomUUID() } });
    await t.app.inject({ url: '/api/stats' });
    // Every route used below has answered once: from here on, no label value may be new.
    const before = await scrape();
    const unmatched = { endpoint: 'unmatched', status: '404' };
    const n0 = sumOf(before.samples, 'rota_requests_total', unmatched);
    const probes: string[] = [];
    for (let i = 0; i < 10_000; i++) {
      const path = `/p-${randomUUID()}`;
      if (i % 1000 === 0) probes.push(path);
      const res = await t.app.inject({ url: i % 2 === 0 ? path : `/api/v1${path}?q=${i}` });
      assert.equal(res.statusCode, 404);
    }
    for (let i = 0; i < 50; i++) {
      await t.app.inject({ url: `/api/v1/proxies/${randomUUID()}` });
      await t.app.inject({ method: 'POST', url: `/api/v1/circuit-breakers/${randomUUID()}/reset` });
    }
    await t.app.inject({ url: '/api/stats' });
    const after = await scrape();
    assert.equal(sumOf(after.samples, 'rota_requests_total', unmatched) - n0, 10_000);
    const grown = [...seriesKeys(after.samples)].filter((k) => !seriesKeys(before.samples).has(k));
    // Only the histogram buckets of durations not seen before may appear; never a new label value.
    assert.deepEqual(
      grown.filter(
        (k) => !k.startsWith('rota_request_duration_seconds_bucket') && !k.startsWith('rota_nodejs'),
      ),
      [],
    );
    for (const p of probes) assert.ok(!after.text.includes(p), p);
    assert.doesNotMatch(after.text, /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/);
    const labelled = sumOf(after.samples, 'rota_requests_total', { endpoint: '/api/v1/proxies/:proxy_id' });
    assert.ok(labelled >= 51, 'unknown ids count under the route template');
    assert.ok(sumOf(after.samples, 'rota_requests_total', { endpoint: '/api/v1/stats' }) >= 2, '/api alias');
  });
});

describe('series of a deleted proxy', () => {
  it('disappear from every metrics view; its breaker events stay history; credentials never appear', async () => {
    const add = async (body: Record<string, string>) =>
      (await api.data<{ id: string }>('POST', '/proxies', { body })).id;
    const keep = await add({ url: `http://127.0.0.1:${p1.port}` });
    const gone = await add({ url: `http://127.0.0.1:${p2.port}`, username: 'bob', password: SECRET });
    for (let i = 0; i < 4; i++)
      await api.data('POST', '/request', { body: { url: `${target.origin}/json` } });
    // A manual reset is a breaker event of each proxy.
    for (const id of [keep, gone]) {
      await api.data('POST', '/circuit-breakers/{proxy_id}/reset', { params: { proxy_id: id } });
    }
    const views = async () => [
      (await scrape()).text,
      (await scrape('/metrics/retry?format=prometheus')).text,
      (await scrape('/metrics/circuit-breaker?format=prometheus')).text,
      JSON.stringify((await api.rootJson('/metrics/retry')).json),
      JSON.stringify(await api.data('GET', '/circuit-breakers')),
      JSON.stringify(await api.data<StatsJson>('GET', '/stats')),
      JSON.stringify(await api.data<RetryMetricsJson['by_proxy']>('GET', '/metrics/retries/by-proxy')),
    ];
    const history = async () =>
      (await api.data<{ proxy_id: string }[]>('GET', '/circuit-breakers/metrics')).map((e) => e.proxy_id);
    const { samples } = await scrape();
    assert.equal(sumOf(samples, 'rota_upstream_attempts_total', { proxy_id: gone }), 2);
    assert.equal(sumOf(samples, 'rota_upstream_latency_seconds_count', { proxy_id: gone }), 2);
    assert.equal(sumOf(samples, 'rota_proxies_total'), 2);
    for (const v of await views()) {
      assert.ok(v.includes(gone) && v.includes(keep), v.slice(0, 200));
      assert.ok(!v.includes(SECRET) && !v.includes('bob:'), 'no credential in any metric');
    }
    assert.deepEqual(await history(), [keep, gone]);

    assert.equal(
      (await api.call('DELETE', '/proxies/{proxy_id}', { params: { proxy_id: gone } })).status,
      204,
    );
    for (const v of await views()) {
      assert.ok(!v.includes(gone), `a series of the deleted proxy is left: ${v.slice(0, 300)}`);
      assert.ok(v.includes(keep), 'the other proxy keeps its series');
    }
    assert.deepEqual(await history(), [keep, gone], 'what happened stays in the event history');
    const cb = parseSamples((await scrape('/metrics/circuit-breaker?format=prometheus')).text);
    assert.equal(sumOf(cb, 'rota_circuit_breaker_events'), 2, 'the total still counts every event');
    const after = await scrape();
    assert.equal(sumOf(after.samples, 'rota_proxies_total'), 1);
    assertPromtoolAccepts(after.text, '/metrics after a deletion');
    // Process-wide counters keep their history: the deleted proxy's calls still count there.
    assert.equal(sumOf(after.samples, 'rota_requests_proxied_total', { outcome: 'success' }), 4);
  });
});
