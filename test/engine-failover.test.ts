import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { type RawFixture, startBlackhole, startResetter } from './fixtures/misbehaving.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import type { TestApp } from './helpers/app.ts';
import {
  addProxy,
  breakerState,
  engineApp,
  getProxy,
  NO_BACKOFF,
  proxiedOk,
  putPolicy,
  SkewClock,
} from './helpers/engine.ts';
import { closedPort as refusingPort } from './helpers/real-proxies.ts';

/*
 * Failover and circuit breakers through POST /api/v1/request, with three dead proxies (closed port,
 * blackhole, reset) and two live ones. The breakers run on a wall clock that the test moves forward,
 * so "half-open" comes without waiting for it.
 */

const BREAKER_TIMEOUT_S = 30;
let target: TargetServer;
let live: ForwardProxy[];
let blackhole: RawFixture;
let resetter: RawFixture;
let closedPort: number;
let t: TestApp;
let clock: SkewClock;
let dead: { closed: string; blackhole: string; reset: string };
let liveIds: string[];

before(async () => {
  [target, blackhole, resetter, closedPort] = await Promise.all([
    startTarget(),
    startBlackhole(),
    startResetter(),
    refusingPort(),
  ]);
  live = await Promise.all([startForwardProxy(), startForwardProxy()]);
  clock = new SkewClock();
  // max_retries 5 (= max_attempts): round-robin over 3 dead + 2 live proxies meets at most three dead
  // ones in a row, so a fourth attempt always lands on a live proxy; 5 leaves one to spare.
  t = await engineApp(
    {
      ROTA_MAX_RETRIES: '5',
      ROTA_BREAKER_FAILURE_THRESHOLD: '2',
      ROTA_BREAKER_TIMEOUT_S: String(BREAKER_TIMEOUT_S),
      ROTA_CONNECT_TIMEOUT_S: '0.2',
      // Sequential attempts, so that each dead proxy's failures are counted exactly; hedging has its own
      // tests (engine-hedge.test.ts).
      ROTA_HEDGE_DELAY_S: '0',
    },
    { clock },
  );
  await putPolicy(t, NO_BACKOFF);
  // Creation order is the round-robin order: the dead ones first, so that the first call meets all three.
  dead = {
    closed: await addProxy(t, `http://127.0.0.1:${closedPort}`),
    blackhole: await addProxy(t, `http://127.0.0.1:${blackhole.port}`),
    reset: await addProxy(t, `http://127.0.0.1:${resetter.port}`),
  };
  liveIds = [
    await addProxy(t, `http://127.0.0.1:${live[0]?.port}`),
    await addProxy(t, `http://127.0.0.1:${live[1]?.port}`),
  ];
});

after(async () => {
  await t.close();
  await Promise.all([target, blackhole, resetter, ...live].map((f) => f.close()));
});

const liveUrls = () => live.map((p) => `http://127.0.0.1:${p.port}`);
const call = () => proxiedOk(t, { url: target.url('/json').href, timeout: 5 });

describe('3 dead and 2 live proxies', () => {
  test('every request succeeds through a live proxy, the dead ones are failed over', async () => {
    const attempts: number[] = [];
    for (let i = 0; i < 8; i++) {
      const d = await call();
      assert.equal(d.status_code, 200);
      assert.deepEqual(JSON.parse(d.body), { ok: true });
      assert.ok(liveUrls().includes(d.proxy_used), d.proxy_used);
      attempts.push(d.attempts);
    }
    assert.equal(attempts[0], 4, 'the first call meets the three dead proxies, then a live one');
    assert.ok(blackhole.connections >= 2 && resetter.connections >= 2);
    for (const id of Object.values(dead)) {
      assert.equal(await breakerState(t, id), 'open', id);
      const p = await getProxy(t, id);
      assert.equal(p.status, 'failed');
      assert.equal(p.stats.failed_requests, 2);
      assert.equal(p.health, 'degraded', 'two consecutive proxy faults');
    }
    for (const id of liveIds) {
      const p = await getProxy(t, id);
      assert.equal(p.health, 'healthy');
      assert.equal(p.stats.failed_requests, 0);
      assert.ok(p.stats.successful_requests >= 3);
    }
  });

  test('with the breakers open no request touches a dead proxy', async () => {
    const before = { bh: blackhole.connections, rs: resetter.connections };
    const closedBefore = (await getProxy(t, dead.closed)).stats.total_requests;
    const started = performance.now();
    for (let i = 0; i < 10; i++) {
      const d = await call();
      assert.equal(d.attempts, 1, 'straight to a live proxy');
      assert.ok(liveUrls().includes(d.proxy_used));
    }
    assert.ok(performance.now() - started < 2_000, 'no time lost on dead proxies');
    assert.deepEqual({ bh: blackhole.connections, rs: resetter.connections }, before);
    assert.equal((await getProxy(t, dead.closed)).stats.total_requests, closedBefore);
    for (const id of Object.values(dead)) assert.equal(await breakerState(t, id), 'open');
    const status = (await t.app.inject({ method: 'GET', url: '/api/v1/status' })).json().pool_stats;
    assert.deepEqual([status.total, status.active, status.failed], [5, 2, 3]);
  });

  test('once half-open each dead proxy gets exactly one trial, fails it and opens again', async () => {
    const before = { bh: blackhole.connections, rs: resetter.connections };
    const closedBefore = (await getProxy(t, dead.closed)).stats.total_requests;
    clock.skewMs += BREAKER_TIMEOUT_S * 1000;
    for (const id of Object.values(dead)) assert.equal(await breakerState(t, id), 'half-open');
    for (let i = 0; i < 6; i++) assert.equal((await call()).status_code, 200);
    assert.deepEqual(
      { bh: blackhole.connections, rs: resetter.connections },
      {
        bh: before.bh + 1,
        rs: before.rs + 1,
      },
    );
    assert.equal((await getProxy(t, dead.closed)).stats.total_requests, closedBefore + 1);
    for (const id of Object.values(dead)) assert.equal(await breakerState(t, id), 'open');
  });
});
