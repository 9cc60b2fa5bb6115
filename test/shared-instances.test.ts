import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { startNginx, type TestNginx } from './helpers/nginx.ts';
import { closedPort } from './helpers/real-proxies.ts';
import { startRedis, type TestRedis } from './helpers/redis.ts';
import { type RunningServer, startServer } from './helpers/server.ts';

/*
 * Three Rota processes as one, behind nginx: one SQLite pool file (one host) and one Redis. What one
 * instance changes, every instance applies within 1 s; limits hold across instances; a Redis outage
 * fails no request.
 */

const KEY = 'shared-instances-key-0123456789';
let redis: TestRedis;
let nginx: TestNginx;
let target: TargetServer;
let live: ForwardProxy[];
let dir: string;
const rota: RunningServer[] = [];

async function api(
  base: string,
  path: string,
  init: RequestInit = {},
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${base}${path}`, {
    ...init,
    headers: { 'content-type': 'application/json', ...(init.headers as Record<string, string>) },
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : null };
}

const data = <T>(r: { body: unknown }) => (r.body as { data: T }).data;

async function within(ms: number, check: () => Promise<boolean>): Promise<number> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - t0;
}

before(async () => {
  [redis, target, live] = await Promise.all([
    startRedis(),
    startTarget(),
    Promise.all([startForwardProxy(), startForwardProxy({ auth: { username: 'u', password: 'p-secret' } })]),
  ]);
  dir = await mkdtemp(join(tmpdir(), 'rota-shared-'));
  for (let i = 0; i < 3; i++) {
    rota.push(
      await startServer({
        ROTA_STORAGE_PATH: join(dir, 'rota.db'),
        ROTA_REDIS_URL: redis.url,
        ROTA_SSRF_ALLOW: '127.0.0.0/8',
        ROTA_API_KEY: KEY,
        ROTA_RATE_LIMIT: '400/minute',
        ROTA_API_KEY_RATE_LIMIT: '250/minute',
        ROTA_RATE_LIMIT_REQUEST: '100000/minute',
        ROTA_RATE_LIMIT_ADD_PROXY: '100000/minute',
        ROTA_RATE_LIMIT_CONFIG: '100000/minute',
        ROTA_RATE_LIMIT_RESET: '100000/minute',
        ROTA_BREAKER_FAILURE_THRESHOLD: '2',
        ROTA_HEDGE_DELAY_S: '0',
        ROTA_CONNECT_TIMEOUT_S: '1',
      }),
    );
  }
  nginx = await startNginx(rota.map((r) => r.port));
});

after(async () => {
  await nginx?.close();
  await Promise.all(rota.map((r) => r.stop()));
  await Promise.all([redis.close(), target.close(), ...live.map((p) => p.close())]);
  await rm(dir, { recursive: true, force: true });
});

const k = { 'x-api-key': KEY };

describe('three instances, one pool and one state', () => {
  let liveId: string;
  let authId: string;
  let deadId: string;

  test('a proxy added on one (credentials included) is served by all within 1 s', async () => {
    const [a, b, c] = rota.map((r) => r.url) as [string, string, string];
    const add = (body: unknown) =>
      api(a, '/api/v1/proxies', { method: 'POST', body: JSON.stringify(body), headers: k });
    liveId = data<{ id: string }>(await add({ url: `http://127.0.0.1:${live[0]?.port}` })).id;
    authId = data<{ id: string }>(
      await add({
        url: `http://127.0.0.1:${live[1]?.port}`,
        username: 'u',
        password: 'p-secret',
        country: 'DE',
      }),
    ).id;
    for (const base of [b, c]) {
      await within(
        1_000,
        async () => (await api(base, `/api/v1/proxies/${authId}`, { headers: k })).status === 200,
      );
      const r = await api(base, '/api/v1/request', {
        method: 'POST',
        headers: k,
        body: JSON.stringify({ url: target.url('/json').href, country: 'DE', session_id: `de-${base}` }),
      });
      assert.equal(
        data<{ status_code: number }>(r).status_code,
        200,
        'the credentials decrypt on every instance',
      );
    }
  });

  test('a breaker opened on one is open on all within 1 s', async () => {
    const [a, b, c] = rota.map((r) => r.url) as [string, string, string];
    const dead = await api(a, '/api/v1/proxies', {
      method: 'POST',
      headers: k,
      body: JSON.stringify({ url: `http://127.0.0.1:${await closedPort()}`, country: 'FR' }),
    });
    deadId = data<{ id: string }>(dead).id;
    // Round-robin reaches the dead proxy every third call; two failures open its breaker.
    await within(5_000, async () => {
      const body = JSON.stringify({ url: target.url('/json').href });
      await api(a, '/api/v1/request', { method: 'POST', headers: k, body });
      const r = await api(a, `/api/v1/circuit-breakers/${deadId}`, { headers: k });
      return data<{ state: string }>(r).state === 'open';
    });
    for (const base of [b, c]) {
      const ms = await within(1_000, async () => {
        const r = await api(base, `/api/v1/circuit-breakers/${deadId}`, { headers: k });
        return data<{ state: string }>(r).state === 'open';
      });
      assert.ok(ms <= 1_000);
    }
  });

  test('a config change and a session are seen everywhere', async () => {
    const [a, b, c] = rota.map((r) => r.url) as [string, string, string];
    await api(a, '/api/v1/config', {
      method: 'PUT',
      headers: k,
      body: JSON.stringify({ rotation_strategy: 'random' }),
    });
    for (const base of [b, c]) {
      await within(1_000, async () => {
        const r = await api(base, '/api/v1/config', { headers: k });
        return data<{ rotation_strategy: string }>(r).rotation_strategy === 'random';
      });
    }
    const body = (session: string) => JSON.stringify({ url: target.url('/json').href, session_id: session });
    const first = data<{ proxy_id: string }>(
      await api(a, '/api/v1/request', { method: 'POST', headers: k, body: body('s-1') }),
    );
    await new Promise((r) => setTimeout(r, 200));
    for (const base of [b, c]) {
      for (let i = 0; i < 3; i++) {
        const r = data<{ proxy_id: string }>(
          await api(base, '/api/v1/request', { method: 'POST', headers: k, body: body('s-1') }),
        );
        assert.equal(r.proxy_id, first.proxy_id, 'one session, one proxy, on every instance');
      }
    }
    assert.ok([liveId, authId].includes(first.proxy_id));
  });

  test('per-proxy counters are cluster-wide within 2 s', async () => {
    // Let what earlier tests did reach every instance first.
    await new Promise((r) => setTimeout(r, 2_200));
    const before = data<{ stats: { total_requests: number } }>(
      await api(nginx.url, `/api/v1/proxies/${liveId}`, { headers: k }),
    ).stats.total_requests;
    await api(nginx.url, '/api/v1/config', {
      method: 'PUT',
      headers: k,
      body: JSON.stringify({ rotation_strategy: 'round-robin' }),
    });
    await new Promise((r) => setTimeout(r, 300));
    let sent = 0;
    for (let i = 0; i < 9; i++) {
      const r = await api(nginx.url, '/api/v1/request', {
        method: 'POST',
        headers: k,
        body: JSON.stringify({ url: target.url('/json').href, session_id: `count-${liveId}` }),
      });
      if (data<{ proxy_id: string }>(r).proxy_id === liveId) sent++;
    }
    for (const r of rota) {
      await within(2_000, async () => {
        const p = data<{ stats: { total_requests: number } }>(
          await api(r.url, `/api/v1/proxies/${liveId}`, { headers: k }),
        );
        return p.stats.total_requests === before + sent;
      });
    }
  });

  test('a per-IP and a per-key limit hold across instances (1,000 requests through nginx)', async () => {
    // What is left of the window when the measure starts (earlier tests used some of it).
    const left = async (headers: Record<string, string>) =>
      Number((await fetch(`${nginx.url}/api/v1/status`, { headers })).headers.get('ratelimit-remaining'));
    const count = async (headers: Record<string, string>) => {
      let ok = 0;
      for (let i = 0; i < 1_000; i += 50) {
        const batch = await Promise.all(
          Array.from({ length: 50 }, () =>
            fetch(`${nginx.url}/api/v1/status`, { headers }).then((r) => r.status),
          ),
        );
        ok += batch.filter((s) => s === 200).length;
      }
      return ok;
    };
    const ipLeft = await left({});
    const byIp = await count({});
    assert.ok(
      Math.abs(byIp - ipLeft) <= ipLeft * 0.05,
      `per IP: ${byIp} of 1,000 passed, ${ipLeft} left of 400`,
    );
    assert.ok(ipLeft > 300);
    const keyLeft = await left(k);
    const byKey = await count(k);
    assert.ok(
      Math.abs(byKey - keyLeft) <= keyLeft * 0.05,
      `per key: ${byKey} passed, ${keyLeft} left of 250`,
    );
    assert.ok(keyLeft > 100);
  });

  test('Redis gone mid-load: no request fails, rota_shared_state_up 0, then back and resynchronised', async () => {
    const load = async (n: number) => {
      const statuses = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          fetch(`${nginx.url}/api/v1/request`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...k },
            body: JSON.stringify({ url: target.url(`/json?o=${i}`).href, country: 'DE' }),
          }).then((r) => r.status),
        ),
      );
      return statuses;
    };
    const during = load(60);
    await redis.stop();
    const statuses = [...(await during), ...(await load(60))];
    assert.deepEqual([...new Set(statuses)], [200], 'no request failed because Redis went away');
    for (const r of rota) {
      await within(3_000, async () =>
        (await (await fetch(`${r.url}/metrics`, { headers: k })).text()).includes('rota_shared_state_up 0'),
      );
    }
    // A change made while Redis is down reaches the others after it is back (resynchronisation).
    const added = await api(rota[0]!.url, '/api/v1/proxies', {
      method: 'POST',
      headers: k,
      body: JSON.stringify({ url: `http://127.0.0.1:${live[0]?.port}`, username: 'late' }),
    });
    const lateId = data<{ id: string }>(added).id;
    await redis.start();
    for (const r of rota) {
      await within(5_000, async () =>
        (await (await fetch(`${r.url}/metrics`, { headers: k })).text()).includes('rota_shared_state_up 1'),
      );
      await within(
        3_000,
        async () => (await api(r.url, `/api/v1/proxies/${lateId}`, { headers: k })).status === 200,
      );
    }
    assert.ok(deadId);
  });
});
