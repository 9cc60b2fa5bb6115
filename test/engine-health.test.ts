import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { type Fixture, listen, SocketTracker, stop } from './fixtures/server.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { json, type TestApp } from './helpers/app.ts';
import { addProxy, deleteProxy, engineApp, getProxy } from './helpers/engine.ts';
import { closedPort } from './helpers/real-proxies.ts';

/* POST proxies/health-check (and the deprecated proxies/test) against ROTA_HEALTH_CHECK_URL. */

interface HealthResult {
  proxy_id: string;
  status: 'working' | 'failed';
  latency_ms: number;
  error: string | null;
  tested_at: string;
}

/**
 * `n` slow proxies that answer every request themselves after `delayMs`, sharing one in-flight
 * counter: the highest value it reaches is how many checks ran at the same time.
 */
async function startSlowProxies(n: number, delayMs: number) {
  const gauge = { now: 0, max: 0, served: 0 };
  const fixtures: Fixture[] = [];
  for (let i = 0; i < n; i++) {
    const server = http.createServer((_req, res) => {
      gauge.now++;
      gauge.max = Math.max(gauge.max, gauge.now);
      setTimeout(() => {
        gauge.now--;
        gauge.served++;
        res.writeHead(204).end();
      }, delayMs);
    });
    const tracker = new SocketTracker(server);
    const port = await listen(server);
    fixtures.push({
      port,
      get connections() {
        return tracker.connections;
      },
      close: () => stop(server, tracker),
    });
  }
  return { gauge, fixtures };
}

let target: TargetServer;
let live: ForwardProxy;
let t: TestApp;
let liveId: string;
let deadId: string;

before(async () => {
  [target, live] = await Promise.all([startTarget(), startForwardProxy()]);
  t = await engineApp({
    ROTA_HEALTH_CHECK_URL: target.url('/json').href,
    ROTA_HEALTH_CHECK_CONCURRENCY: '2',
    ROTA_TIMEOUT: '2',
  });
  liveId = await addProxy(t, `http://127.0.0.1:${live.port}`);
  deadId = await addProxy(t, `http://127.0.0.1:${await closedPort()}`);
});
after(async () => {
  await t.close();
  await Promise.all([target.close(), live.close()]);
});

async function check(body?: unknown, path = '/api/v1/proxies/health-check') {
  const res = await t.app.inject({ method: 'POST', url: path, ...(body === undefined ? {} : json(body)) });
  return res;
}

async function results(body?: unknown): Promise<HealthResult[]> {
  const res = await check(body);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data as HealthResult[];
}

describe('health checks', () => {
  test('check every proxy: working or failed, latency, error, and the outcome written back', async () => {
    const before = target.count('GET', '/json');
    const r = await results({});
    assert.deepEqual(
      r.map((x) => [x.proxy_id, x.status]),
      [
        [liveId, 'working'],
        [deadId, 'failed'],
      ],
    );
    const [ok, bad] = r as [HealthResult, HealthResult];
    assert.equal(ok.error, null);
    assert.ok(ok.latency_ms > 0);
    assert.match(bad.error ?? '', /^connect: /);
    for (const x of r) assert.ok(Math.abs(Date.parse(x.tested_at) - Date.now()) < 5_000);
    assert.equal(target.count('GET', '/json') - before, 1, 'the live proxy fetched the check URL');
    assert.equal(live.requests.at(-1)?.target, target.url('/json').href);

    const up = await getProxy(t, liveId);
    assert.deepEqual([up.health, up.stats.successful_requests], ['healthy', 1]);
    const down = await getProxy(t, deadId);
    assert.deepEqual([down.health, down.stats.failed_requests], ['degraded', 1]);
    const breaker = await t.app.inject({ method: 'GET', url: `/api/v1/circuit-breakers/${deadId}` });
    assert.equal(breaker.json().data.failure_count, 1);
  });

  test('no body at all checks every proxy too', async () => {
    assert.equal((await results()).length, 2);
    assert.equal((await getProxy(t, deadId)).stats.failed_requests, 2);
  });

  test('a JSON null body is not an object: 422, and nothing is checked', async () => {
    const before = (await getProxy(t, deadId)).stats.total_requests;
    for (const url of ['/api/v1/proxies/health-check', '/api/v1/proxies/test']) {
      const res = await t.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json' },
        payload: 'null',
      });
      assert.equal(res.statusCode, 422, res.body);
      assert.equal(res.json().error.code, 'VALIDATION_ERROR');
    }
    assert.equal((await getProxy(t, deadId)).stats.total_requests, before);
  });

  test('proxy_ids narrows the check; unknown ids are skipped', async () => {
    const before = (await getProxy(t, deadId)).stats.total_requests;
    const r = await results({ proxy_ids: [liveId, 'no-such-proxy', liveId] });
    assert.deepEqual(
      r.map((x) => x.proxy_id),
      [liveId],
    );
    assert.equal((await getProxy(t, deadId)).stats.total_requests, before, 'the other one was not checked');
    assert.deepEqual(await results({ proxy_ids: ['nope'] }), []);
  });

  test('the deprecated proxies/test answers the same, with a Deprecation header', async () => {
    const res = await check({ proxy_ids: [liveId] }, '/api/v1/proxies/test');
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers.deprecation, 'true');
    assert.match(String(res.headers.link), /proxies\/health-check/);
    const [r] = res.json().data as HealthResult[];
    assert.deepEqual([r?.proxy_id, r?.status, r?.error], [liveId, 'working', null]);
  });

  test('more than 1000 proxy_ids is a 422', async () => {
    const ids = Array.from({ length: 1001 }, (_, i) => `id-${i}`);
    const res = await check({ proxy_ids: ids });
    assert.equal(res.statusCode, 422, res.body);
    assert.equal(res.json().error.code, 'VALIDATION_ERROR');
    assert.equal((await results({ proxy_ids: ids.slice(0, 1000) })).length, 0);
  });

  test('a passed check makes a failing proxy healthy again', async () => {
    const server = http.createServer();
    const tracker = new SocketTracker(server);
    const port = await listen(server);
    // Add it, stop it, check it (fails), start a proxy on the same port, check it again.
    const id = await addProxy(t, `http://127.0.0.1:${port}`);
    await stop(server, tracker);
    assert.equal((await results({ proxy_ids: [id] }))[0]?.status, 'failed');
    assert.equal((await getProxy(t, id)).health, 'degraded');
    const back = http.createServer((_req, res) => res.writeHead(200).end('ok'));
    await new Promise<void>((resolve) => back.listen(port, '127.0.0.1', resolve));
    try {
      assert.equal((await results({ proxy_ids: [id] }))[0]?.status, 'working');
      assert.equal((await getProxy(t, id)).health, 'healthy');
    } finally {
      back.closeAllConnections();
      await new Promise((r) => back.close(r));
    }
  });
});

describe('health-check concurrency', () => {
  test('never more than ROTA_HEALTH_CHECK_CONCURRENCY checks in flight', async () => {
    const { gauge, fixtures } = await startSlowProxies(5, 150);
    try {
      const ids: string[] = [];
      for (const f of fixtures) ids.push(await addProxy(t, `http://127.0.0.1:${f.port}`));
      const started = performance.now();
      const r = await results({ proxy_ids: ids });
      const took = performance.now() - started;
      assert.equal(r.length, 5);
      assert.ok(r.every((x) => x.status === 'working'));
      assert.equal(gauge.served, 5);
      assert.equal(gauge.max, 2, 'two at a time');
      assert.ok(took >= 3 * 150 - 20, `three rounds of two: ${took} ms`);
    } finally {
      await Promise.all(fixtures.map((f) => f.close()));
    }
  });

  test('overlapping checks share the bound', async () => {
    const { gauge, fixtures } = await startSlowProxies(6, 100);
    try {
      const ids: string[] = [];
      for (const f of fixtures) ids.push(await addProxy(t, `http://127.0.0.1:${f.port}`));
      const [a, b] = await Promise.all([
        results({ proxy_ids: ids.slice(0, 3) }),
        results({ proxy_ids: ids.slice(3) }),
      ]);
      assert.equal([...a, ...b].filter((x) => x.status === 'working').length, 6);
      assert.equal(gauge.max, 2);
    } finally {
      await Promise.all(fixtures.map((f) => f.close()));
    }
  });

  test('a proxy deleted while its check waits for a slot is not contacted', async () => {
    const { fixtures } = await startSlowProxies(3, 200);
    try {
      const ids: string[] = [];
      for (const f of fixtures) ids.push(await addProxy(t, `http://127.0.0.1:${f.port}`));
      const pending = results({ proxy_ids: ids });
      await new Promise((r) => setTimeout(r, 50));
      assert.equal((await deleteProxy(t, ids[2] ?? '')).statusCode, 204);
      const r = await pending;
      assert.deepEqual(
        r.map((x) => x.status),
        ['working', 'working', 'failed'],
      );
      assert.match(r[2]?.error ?? '', /^aborted: /);
      assert.equal(fixtures[2]?.connections, 0);
    } finally {
      await Promise.all(fixtures.map((f) => f.close()));
    }
  });
});
