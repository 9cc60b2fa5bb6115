import assert from 'node:assert/strict';
import http from 'node:http';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { CallerGone, CLIENT_GONE } from '../src/lib/abort.ts';
import type { Work } from '../src/outbound/work.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { listen } from './fixtures/server.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import type { TestApp } from './helpers/app.ts';
import { addProxy, engineApp, getProxy, proxied, proxiedOk, putPolicy } from './helpers/engine.ts';
import { closedPort } from './helpers/real-proxies.ts';

/*
 * Backoff (only for target-side failures, never after the last attempt, never past the deadline) and
 * the numbers that real traffic leaves in GET proxies/{id}, GET stats, retry metrics and GET status.
 */

let target: TargetServer;
let live: ForwardProxy[];
let t: TestApp;

before(async () => {
  [target, ...live] = await Promise.all([startTarget(), startForwardProxy(), startForwardProxy()]);
});
after(async () => {
  await Promise.all([target, ...live].map((f) => f.close()));
});
beforeEach(async () => {
  t = await engineApp({ ROTA_MAX_RETRIES: '3' });
});
afterEach(async () => t.close());

const FIXED = (s: number) => ({
  backoff_strategy: 'fixed',
  base_delay: s,
  max_backoff_delay: s,
  jitter: false,
});

async function timed<T>(run: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const r = await run();
  return [r, performance.now() - t0];
}

describe('backoff', () => {
  test('a retryable answer waits before the next proxy, and not after the last one', async () => {
    for (const p of live) await addProxy(t, `http://127.0.0.1:${p.port}`);
    await putPolicy(t, FIXED(0.5));
    const hits: number[] = [];
    const busy = http.createServer((_req, res) => {
      hits.push(performance.now());
      res.writeHead(503, { 'content-length': 4 }).end('busy');
    });
    const port = await listen(busy);
    try {
      const d = await proxiedOk(t, { url: `http://127.0.0.1:${port}/` });
      const end = performance.now();
      assert.deepEqual([d.status_code, d.attempts], [503, 2]);
      const [first = 0, second = 0] = hits;
      assert.ok(second - first >= 490, `a pause between the attempts: ${second - first} ms`);
      assert.ok(end - second < 450, `no pause after the last one: ${end - second} ms`);
    } finally {
      busy.closeAllConnections();
      await new Promise((r) => busy.close(r));
    }
  });

  test('the caller leaving during the pause ends it: the answer in hand comes back, no further attempt', async () => {
    for (const p of live) await addProxy(t, `http://127.0.0.1:${p.port}`);
    await putPolicy(t, FIXED(10));
    let runs = 0;
    const busy: Work<{ status: number }> = {
      method: 'GET',
      replay: 'by-method',
      run: async () => {
        runs++;
        return { status: 503 };
      },
      answer: (r) => ({ status: r.status, headers: {}, body: null }),
      discard: () => {},
    };
    const gone = new CallerGone();
    setTimeout(() => gone.abort(CLIENT_GONE), 100);
    const [result, ms] = await timed(() =>
      t.services.executor.execute({ work: busy, timeoutS: 30, host: undefined, signal: gone }),
    );
    assert.equal(result.response.status, 503);
    assert.equal(runs, 1, 'no attempt after the caller left');
    assert.ok(ms < 2_000, `the 10 s pause ended when the caller left: ${ms} ms`);
  });

  test('the answer kept from an earlier proxy still counts every proxy the call went through', async () => {
    await addProxy(t, `http://127.0.0.1:${live[0]?.port}`);
    await addProxy(t, `http://127.0.0.1:${await closedPort()}`); // refuses: a proxy fault, no answer
    await putPolicy(t, FIXED(0));
    const d = await proxiedOk(t, { url: target.url('/status/503').href });
    assert.deepEqual([d.status_code, d.attempts], [503, 2]);
  });

  test('a proxy fault fails over at once, whatever the backoff', async () => {
    await addProxy(t, `http://127.0.0.1:${await closedPort()}`);
    await addProxy(t, `http://127.0.0.1:${live[0]?.port}`);
    await putPolicy(t, FIXED(5));
    const [d, ms] = await timed(() => proxiedOk(t, { url: target.url('/json').href }));
    assert.deepEqual([d.status_code, d.attempts], [200, 2]);
    assert.ok(ms < 2_500, `no 5 s pause: ${ms} ms`);
  });

  test('a pause that would reach the deadline is not taken: the target answer comes back at once', async () => {
    for (const p of live) await addProxy(t, `http://127.0.0.1:${p.port}`);
    await putPolicy(t, FIXED(10));
    const [d, ms] = await timed(() => proxiedOk(t, { url: target.url('/status/503').href, timeout: 2 }));
    assert.deepEqual([d.status_code, d.attempts], [503, 1]);
    assert.ok(ms < 1_500, `not held until the 2 s deadline: ${ms} ms`);
  });

  test('a target the proxy cannot reach is TARGET_UNREACHABLE, not a timeout after a useless wait', async () => {
    // The live fixture answers CONNECT to a closed port with 502: the proxy says the target is down.
    for (const p of live) await addProxy(t, `http://127.0.0.1:${p.port}`);
    await putPolicy(t, FIXED(10));
    const closed = await closedPort();
    const [res, ms] = await timed(() => proxied(t, { url: `https://127.0.0.1:${closed}/`, timeout: 3 }));
    assert.equal(res.statusCode, 504, res.body);
    assert.equal(res.json().error.code, 'TARGET_UNREACHABLE');
    assert.ok(ms < 2_000, `not held until the 3 s deadline: ${ms} ms`);
  });
});

describe('numbers from real traffic', () => {
  test('per-proxy stats, GET stats, retry metrics and GET status agree with what happened', async () => {
    const deadPort = await closedPort();
    const dead = await addProxy(t, `http://127.0.0.1:${deadPort}`);
    const ok = [
      await addProxy(t, `http://127.0.0.1:${live[0]?.port}`),
      await addProxy(t, `http://127.0.0.1:${live[1]?.port}`),
    ];
    await putPolicy(t, { base_delay: 0, jitter: false });
    // Round-robin: dead (fails) → ok[0]; ok[1]; dead (fails) → ok[0]; ok[1]: 4 calls, 6 attempts.
    const used: string[] = [];
    for (let i = 0; i < 4; i++)
      used.push((await proxiedOk(t, { url: target.url('/slow?ms=20').href })).proxy_id);
    assert.deepEqual(used, [ok[0], ok[1], ok[0], ok[1]]);

    const d = await getProxy(t, dead);
    assert.deepEqual(
      [d.stats.total_requests, d.stats.successful_requests, d.stats.failed_requests],
      [2, 0, 2],
    );
    for (const id of ok) {
      const p = await getProxy(t, id);
      assert.deepEqual(
        [p.stats.total_requests, p.stats.successful_requests, p.stats.failed_requests],
        [2, 2, 0],
      );
      assert.ok(
        p.stats.avg_latency_ms >= 15 && p.stats.avg_latency_ms < 1_000,
        String(p.stats.avg_latency_ms),
      );
    }

    const stats = (await t.app.inject({ method: 'GET', url: '/api/v1/stats' })).json().data;
    assert.equal(stats.requests_total, 4);
    assert.equal(stats.error_rate, 0);
    assert.ok(stats.avg_latency_ms >= 15);
    const byId = new Map(stats.proxy_stats.map((s: { proxy_id: string }) => [s.proxy_id, s]));
    assert.deepEqual(byId.get(dead), {
      ...(byId.get(dead) as object),
      requests: 2,
      successes: 0,
      failures: 2,
    });
    assert.equal((byId.get(ok[0]) as { successes: number }).successes, 2);

    const retries = (await t.app.inject({ method: 'GET', url: '/api/v1/metrics/retries' })).json().data;
    assert.equal(retries.total_retries, 2, 'attempts after the first');
    assert.deepEqual(retries.success_by_attempt, { '1': 2, '2': 2 });

    const status = (await t.app.inject({ method: 'GET', url: '/api/v1/status' })).json();
    assert.deepEqual(
      [status.pool_stats.total, status.pool_stats.active, status.pool_stats.failed],
      [3, 3, 0],
    );
    assert.ok(Date.now() - Date.parse(status.pool_stats.last_rotation) < 5_000);
  });

  test('the retryable answer handed to the caller counts as the call’s success', async () => {
    for (const p of live) await addProxy(t, `http://127.0.0.1:${p.port}`);
    await putPolicy(t, { base_delay: 0, jitter: false });
    const d = await proxiedOk(t, { url: target.url('/status/503').href });
    assert.deepEqual([d.status_code, d.attempts], [503, 2]);
    const retries = (await t.app.inject({ method: 'GET', url: '/api/v1/metrics/retries' })).json().data;
    assert.deepEqual(retries.success_by_attempt, { '2': 1 });
    const stats = (await t.app.inject({ method: 'GET', url: '/api/v1/stats' })).json().data;
    const answered = stats.proxy_stats.find((s: { proxy_id: string }) => s.proxy_id === d.proxy_id);
    assert.deepEqual([answered.requests, answered.successes], [1, 1]);
  });
});
