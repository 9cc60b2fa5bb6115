import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { Api, injectTransport, type Reply } from './helpers/api-contract.ts';
import { makeApp, type TestApp } from './helpers/app.ts';
import { parseSamples, sumOf } from './helpers/metrics.ts';

/** PUT config `rate_limits` applies to the very next request (docs/decisions.md, "Auth and rate limits"). */

let target: TargetServer;
let proxy: ForwardProxy;
let t: TestApp;
let api: Api;

before(async () => {
  [target, proxy] = await Promise.all([startTarget(), startForwardProxy()]);
  // The default limit is the one under test here: back to 100/minute, not the suite's generous one.
  t = await makeApp({ ROTA_SSRF_ALLOW: '127.0.0.0/8', ROTA_RATE_LIMIT: '100/minute' });
  api = await Api.over(injectTransport(t.app));
  await api.data('POST', '/proxies', { body: { url: `http://127.0.0.1:${proxy.port}` } });
});
after(async () => {
  await t.close();
  await Promise.all([target.close(), proxy.close()]);
});

async function rejections(endpoint: string): Promise<number> {
  const res = await t.app.inject({ url: '/metrics' });
  return sumOf(parseSamples(res.body), 'rota_rate_limit_rejections_total', { endpoint });
}

function assertLimited(r: Reply, limit: number): void {
  assert.equal(r.status, 429, r.text);
  const body = r.json as { error: { code: string; details: { limit: number } } };
  assert.equal(body.error.code, 'RATE_LIMIT_EXCEEDED');
  assert.equal(body.error.details.limit, limit);
  assert.match(r.headers['retry-after'] ?? '', /^\d+$/);
  assert.equal(r.headers['ratelimit-limit'], String(limit));
}

describe('rate_limits', () => {
  it('a lower default_limit makes the next requests 429, a higher one lets them through again', async () => {
    const view = await api.data<{ rate_limits: { default_limit: number } }>('PUT', '/config', {
      body: { rate_limits: { default_limit: 3 } },
    });
    assert.equal(view.rate_limits.default_limit, 3);
    const seen: number[] = [];
    let limited: Reply | undefined;
    for (let i = 0; i < 6 && !limited; i++) {
      const r = await api.call('GET', '/stats');
      seen.push(r.status);
      if (r.status === 429) limited = r;
    }
    assert.ok(limited, `no 429 within 6 calls at a limit of 3: ${seen}`);
    assertLimited(limited, 3);
    // Requests made before the change count in the same window, so the 429 may come before the 4th call.
    assert.ok(seen.length <= 4, String(seen));
    assert.ok((await rejections('/api/v1/stats')) >= 1);
    // PUT config has its own limit, so the operator can always raise the default back.
    await api.data('PUT', '/config', { body: { rate_limits: { default_limit: 1000 } } });
    assert.equal((await api.call('GET', '/stats')).status, 200);
  });

  it('a lower request_endpoint_limit limits POST request only, from the next call', async () => {
    const body = { url: `${target.origin}/json` };
    assert.equal((await api.call('POST', '/request', { body })).status, 200);
    const view = await api.data<{ rate_limits: { request_endpoint_limit: number; default_limit: number } }>(
      'PUT',
      '/config',
      { body: { rate_limits: { request_endpoint_limit: 2 } } },
    );
    assert.deepEqual(view.rate_limits, { default_limit: 1000, request_endpoint_limit: 2 }, 'partial update');
    const statuses: number[] = [];
    let limited: Reply | undefined;
    for (let i = 0; i < 3; i++) {
      const r = await api.call('POST', '/request', { body });
      statuses.push(r.status);
      if (r.status === 429) limited = r;
    }
    assert.deepEqual(statuses, [200, 429, 429], 'one call was already made in this window');
    assert.ok(limited);
    assertLimited(limited, 2);
    assert.equal(await rejections('/api/v1/request'), 2);
    assert.equal((await api.call('GET', '/stats')).status, 200, 'other routes keep the default');
    await api.data('PUT', '/config', { body: { rate_limits: { request_endpoint_limit: 50 } } });
    assert.equal((await api.call('POST', '/request', { body })).status, 200);
  });
});
