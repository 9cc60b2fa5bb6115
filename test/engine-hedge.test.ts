import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { type RawFixture, startBlackhole } from './fixtures/misbehaving.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import type { TestApp } from './helpers/app.ts';
import {
  addProxy,
  breakerState,
  engineApp,
  getProxy,
  NO_BACKOFF,
  proxied,
  proxiedOk,
  putConfig,
  putPolicy,
} from './helpers/engine.ts';

/*
 * Hedging (ROTA_HEDGE_DELAY_S): a replayable call still waiting on a proxy that has not proven itself
 * asks the next proxy too after the delay, and takes the first answer. Here the delay is 0.3 s, the
 * connect timeout 0.5 s, and a call has 3 attempts in 6 s, so an unproven proxy's share is 2 s: without
 * hedging a proxy that never answers costs the caller 2 s.
 */

const HEDGE_S = 0.3;
const SHARE_MS = 2_000;

let target: TargetServer;
let live: ForwardProxy[];
let blackhole: RawFixture;

before(async () => {
  [target, blackhole] = await Promise.all([startTarget(), startBlackhole()]);
  live = await Promise.all([startForwardProxy(), startForwardProxy()]);
});

after(async () => {
  await Promise.all([target, blackhole, ...live].map((f) => f.close()));
});

async function app(env: Record<string, string> = {}): Promise<TestApp> {
  const t = await engineApp({
    ROTA_MAX_RETRIES: '3',
    ROTA_HEDGE_DELAY_S: String(HEDGE_S),
    ROTA_BREAKER_FAILURE_THRESHOLD: '2',
    ...env,
  });
  await putPolicy(t, NO_BACKOFF);
  return t;
}

const url = (path: string) => target.url(path).href;

describe('a proxy that accepts and never answers', () => {
  test('costs a GET the hedge delay, not its share; its silence still counts against it', async () => {
    const t = await app();
    try {
      // Creation order is the round-robin order: the silent proxy first.
      const silent = await addProxy(t, `http://127.0.0.1:${blackhole.port}`);
      const good = await addProxy(t, `http://127.0.0.1:${live[0]!.port}`);
      const t0 = performance.now();
      const d = await proxiedOk(t, { url: url('/json'), timeout: 6 });
      const ms = performance.now() - t0;
      assert.equal(d.status_code, 200);
      assert.equal(d.proxy_id, good);
      assert.equal(d.attempts, 2, 'the silent proxy, then the hedge');
      assert.ok(ms >= HEDGE_S * 1000 - 5, `not before the hedge delay: ${ms} ms`);
      assert.ok(ms < SHARE_MS / 2, `well before the silent proxy's share ends: ${ms} ms`);
      // The overtaken attempt runs on to the end of its share and fails there, as a timeout.
      const deadline = Date.now() + SHARE_MS + 1_500;
      while ((await getProxy(t, silent)).stats.failed_requests < 1 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const p = await getProxy(t, silent);
      assert.equal(p.stats.failed_requests, 1, JSON.stringify(p.stats));
      assert.equal((await getProxy(t, good)).stats.successful_requests, 1);
      // The call is reported once everything it started is over: one call, delivered on attempt 2.
      const retries = (await t.app.inject({ url: '/api/v1/metrics/retries' })).json().data;
      assert.deepEqual(retries.success_by_attempt, { '2': 1 }, JSON.stringify(retries));
      assert.equal(retries.total_retries, 1);
    } finally {
      await t.close();
    }
  });

  test('its breaker opens from the overtaken attempts, and then no call waits on it', async () => {
    const t = await app();
    try {
      const silent = await addProxy(t, `http://127.0.0.1:${blackhole.port}`);
      await addProxy(t, `http://127.0.0.1:${live[0]!.port}`);
      await addProxy(t, `http://127.0.0.1:${live[1]!.port}`);
      const calls = await Promise.all(
        Array.from({ length: 6 }, () => proxiedOk(t, { url: url('/json'), timeout: 6 })),
      );
      for (const d of calls) assert.equal(d.status_code, 200);
      const deadline = Date.now() + SHARE_MS + 2_000;
      while ((await breakerState(t, silent)) !== 'open' && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(await breakerState(t, silent), 'open');
      const before = blackhole.connections;
      const t0 = performance.now();
      for (let i = 0; i < 6; i++) assert.equal((await proxiedOk(t, { url: url('/json') })).attempts, 1);
      assert.ok(performance.now() - t0 < 1_000, 'no call waited');
      assert.equal(blackhole.connections, before, 'no call reached it');
    } finally {
      await t.close();
    }
  });

  test('the call is reported when it is answered; the overtaken attempt is added when it ends', async () => {
    const t = await app();
    try {
      const silent = await addProxy(t, `http://127.0.0.1:${blackhole.port}`);
      const good = await addProxy(t, `http://127.0.0.1:${live[0]!.port}`);
      const d = await proxiedOk(t, { url: url('/json'), timeout: 6 });
      assert.equal(d.attempts, 2);
      const stats = async () => (await t.app.inject({ url: '/api/v1/stats' })).json().data;
      const now = await stats();
      assert.equal(now.requests_total, 1, 'counted at once');
      const perProxy = (s: { proxy_stats: { proxy_id: string; requests: number }[] }, id: string) =>
        s.proxy_stats.find((p) => p.proxy_id === id)?.requests ?? 0;
      assert.equal(perProxy(now, good), 1);
      assert.equal(perProxy(now, silent), 0, 'the overtaken attempt is still running');
      const deadline = Date.now() + SHARE_MS + 1_500;
      while (perProxy(await stats(), silent) === 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const later = await stats();
      assert.equal(perProxy(later, silent), 1, 'added when it ended');
      assert.equal(later.requests_total, 1, 'still one call');
      const retry = (await t.app.inject({ url: '/metrics/retry' })).json().data;
      assert.equal(retry.by_proxy[silent]?.total_attempts, 1, JSON.stringify(retry.by_proxy));
      assert.equal(retry.by_proxy[silent]?.failure_count, 1);
      const prom = (await t.app.inject({ url: '/metrics' })).body;
      assert.match(
        prom,
        new RegExp(`rota_upstream_attempts_total\\{proxy_id="${silent}",outcome="timeout"\\} 1`),
      );
    } finally {
      await t.close();
    }
  });

  test('only GET, HEAD and OPTIONS are hedged: a PUT waits for its proxy', async () => {
    const t = await app();
    try {
      await addProxy(t, `http://127.0.0.1:${blackhole.port}`);
      await addProxy(t, `http://127.0.0.1:${live[0]!.port}`);
      const t0 = performance.now();
      const d = await proxiedOk(t, { url: url('/json'), method: 'PUT', body: 'x', timeout: 6 });
      assert.equal(d.attempts, 2, 'failed over after the share, as before');
      assert.ok(performance.now() - t0 >= SHARE_MS - 50, `${performance.now() - t0} ms`);
    } finally {
      await t.close();
    }
  });

  test('a POST is never hedged: it is not sent twice', async () => {
    const t = await app();
    try {
      await addProxy(t, `http://127.0.0.1:${blackhole.port}`);
      await addProxy(t, `http://127.0.0.1:${live[0]!.port}`);
      const seen = live[0]!.requests.length;
      const t0 = performance.now();
      const res = await proxied(t, { url: url('/json'), method: 'POST', body: 'x', timeout: 1 });
      assert.equal(res.statusCode, 504, res.body);
      assert.ok(performance.now() - t0 >= 950, 'it waited for its deadline');
      assert.equal(live[0]!.requests.length, seen, 'no second proxy was asked');
    } finally {
      await t.close();
    }
  });

  test('a call with a session_id is not hedged: the session keeps its proxy until it fails', async () => {
    const t = await app();
    try {
      await putConfig(t, { rotation_strategy: 'session-persistence' });
      const silent = await addProxy(t, `http://127.0.0.1:${blackhole.port}`);
      const good = await addProxy(t, `http://127.0.0.1:${live[0]!.port}`);
      const t0 = performance.now();
      const d = await proxiedOk(t, { url: url('/json'), timeout: 6, session_id: 's-1' });
      assert.equal(d.proxy_id, good, 'the session failed over once its proxy failed');
      assert.ok(performance.now() - t0 >= SHARE_MS - 50, `it waited: ${performance.now() - t0} ms`);
      assert.equal((await getProxy(t, silent)).stats.failed_requests, 1);
      const again = await proxiedOk(t, { url: url('/json'), session_id: 's-1' });
      assert.equal(again.proxy_id, good, 're-pinned');
    } finally {
      await t.close();
    }
  });

  test('ROTA_HEDGE_DELAY_S=0 turns it off: the caller waits for the silent proxy’s share', async () => {
    const t = await app({ ROTA_HEDGE_DELAY_S: '0' });
    try {
      await addProxy(t, `http://127.0.0.1:${blackhole.port}`);
      await addProxy(t, `http://127.0.0.1:${live[0]!.port}`);
      const t0 = performance.now();
      const d = await proxiedOk(t, { url: url('/json'), timeout: 6 });
      assert.equal(d.attempts, 2);
      assert.ok(performance.now() - t0 >= SHARE_MS - 50, `${performance.now() - t0} ms`);
    } finally {
      await t.close();
    }
  });
});

describe('slow targets', () => {
  test('through a proven proxy, a slow target is asked once: no hedge', async () => {
    const t = await app();
    try {
      await addProxy(t, `http://127.0.0.1:${live[0]!.port}`);
      await addProxy(t, `http://127.0.0.1:${live[1]!.port}`);
      for (let i = 0; i < 2; i++) await proxiedOk(t, { url: url('/json') }); // prove both
      const before = target.count('GET', '/slow');
      const d = await proxiedOk(t, { url: url('/slow?ms=800'), timeout: 6 });
      assert.equal(d.status_code, 200);
      assert.equal(d.attempts, 1);
      assert.equal(target.count('GET', '/slow') - before, 1);
    } finally {
      await t.close();
    }
  });

  test('a body still arriving is not hedged: the proxy has answered', async () => {
    const t = await app();
    try {
      await addProxy(t, `http://127.0.0.1:${live[0]!.port}`);
      await addProxy(t, `http://127.0.0.1:${live[1]!.port}`);
      const before = target.count('GET', '/slow-body');
      const d = await proxiedOk(t, { url: url('/slow-body?ms=800'), timeout: 6 });
      assert.equal(d.status_code, 200);
      assert.equal(d.attempts, 1);
      assert.equal(target.count('GET', '/slow-body') - before, 1);
    } finally {
      await t.close();
    }
  });

  test('through unproven proxies, the first answer wins and the later duplicate is dropped unblamed', async () => {
    const t = await app();
    try {
      const first = await addProxy(t, `http://127.0.0.1:${live[0]!.port}`);
      const second = await addProxy(t, `http://127.0.0.1:${live[1]!.port}`);
      const before = target.count('GET', '/slow');
      const d = await proxiedOk(t, { url: url('/slow?ms=800'), timeout: 6 });
      assert.equal(d.status_code, 200);
      assert.equal(d.proxy_id, first, 'the first proxy answered first');
      assert.equal(d.attempts, 2, 'the hedge was sent');
      assert.equal(target.count('GET', '/slow') - before, 2, 'the cost: the target was asked twice');
      const s = (await getProxy(t, second)).stats;
      assert.equal(s.failed_requests, 0, 'the dropped attempt blames nobody');
      assert.equal(s.total_requests, 0, 'it was cancelled, not left to finish');
      assert.equal(await breakerState(t, second), 'closed');
      assert.equal((await getProxy(t, first)).health, 'healthy');
    } finally {
      await t.close();
    }
  });
});
