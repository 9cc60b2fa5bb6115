import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { basic, type ListeningApp, listeningApp, socks5, viaProxy } from './helpers/forward.ts';
import { startRedis, type TestRedis } from './helpers/redis.ts';

/*
 * One failed-auth budget per client IP (ROTA_AUTH_FAILURE_LIMIT) across the API, both listeners and
 * every instance sharing one Redis. A wrong key is answered (401, 407, SOCKS5 0x01 with an audit line)
 * only within the budget, however many arrive together; past it every presented key, right or wrong, is
 * refused at once (429, SOCKS5 0x01) with no audit line, so the audit lines count the evaluated guesses.
 */

const KEY = 'auth-budget-test-key-0123456789';
const TARGET = 'http://127.0.0.1:9/';
let redis: TestRedis;
let flusher: Redis;

before(async () => {
  redis = await startRedis();
  flusher = new Redis(redis.url, { lazyConnect: true });
  await flusher.connect();
});
after(async () => {
  flusher?.disconnect();
  await redis?.close();
});
// Every test starts with a fresh budget for 127.0.0.1.
beforeEach(async () => {
  await flusher.flushall();
});

function app(env: Record<string, string>): Promise<ListeningApp> {
  return listeningApp({
    ROTA_REQUIRE_AUTH: 'true',
    ROTA_API_KEY: KEY,
    // The bursts below open up to 1,000 connections from one address at once.
    ROTA_MAX_CONNECTIONS_PER_IP: '5000',
    ...env,
  });
}

async function using<T>(apps: Promise<ListeningApp>[], fn: (a: ListeningApp[]) => Promise<T>): Promise<T> {
  const started = await Promise.all(apps);
  try {
    return await fn(started);
  } finally {
    await Promise.all(started.map((a) => a.close()));
  }
}

const audited = (a: ListeningApp, action: string) =>
  a.logs.filter((l) => l.includes(`"action":"${action}"`)).length;

function tally(xs: readonly (number | null)[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[String(x)] = (out[String(x)] ?? 0) + 1;
  return out;
}

const wrongViaHttp = (a: ListeningApp, i: number) =>
  viaProxy(a.httpPort, TARGET, { headers: { 'proxy-authorization': basic('u', `wrong-${i}`) } });
const viaSocks = (a: ListeningApp, password: string) =>
  socks5(a.socksPort, { username: 'u', password, port: 9 }).then((r) => {
    r.socket.destroy();
    return r.authStatus;
  });
const api = (a: ListeningApp, key: string, url = '/api/v1/stats', method: 'GET' | 'POST' | 'PUT' = 'GET') =>
  a.app.inject({
    method,
    url,
    remoteAddress: '127.0.0.1',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    payload: method === 'GET' ? undefined : '{}',
  });

describe('concurrent wrong passwords with Redis: at most the limit are evaluated', () => {
  for (const n of [240, 1_000]) {
    test(`${n} at once through the HTTP listener against 60/minute: 60 answered 407, the rest 429`, () =>
      using([app({ ROTA_REDIS_URL: redis.url, ROTA_AUTH_FAILURE_LIMIT: '60/minute' })], async ([a]) => {
        const answers = await Promise.all(Array.from({ length: n }, (_, i) => wrongViaHttp(a!, i)));
        assert.deepEqual(tally(answers.map((r) => r.status)), { 407: 60, 429: n - 60 });
        assert.equal(audited(a!, 'listener.auth_failed'), 60, 'one audit line per evaluated guess');
        for (const r of answers.filter((x) => x.status === 429)) {
          assert.equal(r.headers['x-rota-error'], 'RATE_LIMIT_EXCEEDED');
          assert.match(String(r.headers['retry-after']), /^[1-9]\d*$/);
        }
        const right = await viaProxy(a!.httpPort, TARGET, {
          headers: { 'proxy-authorization': basic('u', KEY) },
        });
        assert.equal(right.status, 429, 'past the budget the key itself is not evaluated');
      }));
  }

  test('1,000 at once through SOCKS5 against 60/minute: 60 evaluated, every one refused with 0x01', () =>
    using([app({ ROTA_REDIS_URL: redis.url, ROTA_AUTH_FAILURE_LIMIT: '60/minute' })], async ([a]) => {
      const statuses = await Promise.all(Array.from({ length: 1_000 }, (_, i) => viaSocks(a!, `bad-${i}`)));
      assert.deepEqual(tally(statuses), { 1: 1_000 });
      assert.equal(audited(a!, 'listener.auth_failed'), 60);
      assert.equal(await viaSocks(a!, KEY), 0x01, 'the key too, once the budget is spent');
    }));

  test('1,000 at once at the API against 60/minute: 60 answered 401, the rest 429', () =>
    using([app({ ROTA_REDIS_URL: redis.url, ROTA_AUTH_FAILURE_LIMIT: '60/minute' })], async ([a]) => {
      const answers = await Promise.all(Array.from({ length: 1_000 }, (_, i) => api(a!, `wrong-${i}`)));
      assert.deepEqual(tally(answers.map((r) => r.statusCode)), { 401: 60, 429: 940 });
      assert.equal(audited(a!, 'auth.failed'), 60);
      const limited = answers.find((r) => r.statusCode === 429);
      assert.equal(limited?.json().error.code, 'RATE_LIMIT_EXCEEDED');
      assert.match(String(limited?.headers['retry-after']), /^[1-9]\d*$/);
    }));

  test('right keys in flight together are never refused while the budget is not spent', () =>
    using([app({ ROTA_REDIS_URL: redis.url, ROTA_AUTH_FAILURE_LIMIT: '5/minute' })], async ([a]) => {
      const answers = await Promise.all(Array.from({ length: 300 }, () => api(a!, KEY)));
      assert.deepEqual(tally(answers.map((r) => r.statusCode)), { 200: 300 });
      const http = await Promise.all(
        Array.from({ length: 100 }, () =>
          viaProxy(a!.httpPort, TARGET, { headers: { 'proxy-authorization': basic('u', KEY) } }),
        ),
      );
      assert.ok(http.every((r) => r.status !== 407 && r.status !== 429));
    }));
});

/** Thirty wrong keys spread over three API routes (each with a larger limit of its own) and both listeners. */
async function spendThirty(a: ListeningApp, b: ListeningApp = a): Promise<number[]> {
  const got: number[] = [];
  for (let i = 0; i < 10; i++) got.push((await api(a, `w${i}`)).statusCode);
  for (let i = 0; i < 5; i++) got.push((await api(b, `x${i}`, '/api/v1/config', 'PUT')).statusCode);
  for (let i = 0; i < 5; i++) got.push((await api(a, `y${i}`, '/api/v1/proxies', 'POST')).statusCode);
  for (let i = 0; i < 5; i++) got.push((await wrongViaHttp(b, i)).status);
  for (let i = 0; i < 5; i++) got.push((await viaSocks(a, `z${i}`)) === 0x01 ? 407 : 0);
  return got;
}

/** The default per-route limits (the test helpers raise them): 100 + 10 + 5 + ... guesses before. */
const DEFAULT_LIMITS = {
  ROTA_RATE_LIMIT: '100/minute',
  ROTA_RATE_LIMIT_ADD_PROXY: '10/minute',
  ROTA_RATE_LIMIT_CONFIG: '5/minute',
  ROTA_AUTH_FAILURE_LIMIT: '30/minute',
};

async function assertSpent(a: ListeningApp): Promise<void> {
  const wrong = await api(a, 'w-31', '/api/v1/proxies', 'POST');
  assert.equal(wrong.statusCode, 429, 'the 31st guess, on a route not yet at its own limit');
  assert.equal(wrong.json().error.code, 'RATE_LIMIT_EXCEEDED');
  assert.ok(Number(wrong.headers['retry-after']) >= 1);
  assert.equal((await api(a, KEY)).statusCode, 429, 'the right key is not evaluated either');
  const viaListener = await viaProxy(a.httpPort, TARGET, {
    headers: { 'proxy-authorization': basic('u', KEY) },
  });
  assert.equal(viaListener.status, 429);
  assert.equal(viaListener.headers['x-rota-error'], 'RATE_LIMIT_EXCEEDED');
  assert.equal(await viaSocks(a, KEY), 0x01);
  assert.equal(
    (await a.app.inject({ url: '/api/v1/health' })).statusCode,
    200,
    'no key: public routes stay open',
  );
}

describe('one budget per IP across the API routes and both listeners', () => {
  for (const shared of [false, true]) {
    test(`30 wrong keys anywhere spend it; the 31st anywhere is 429 (${shared ? 'Redis' : 'in memory'})`, () =>
      using([app({ ...DEFAULT_LIMITS, ...(shared ? { ROTA_REDIS_URL: redis.url } : {}) })], async ([a]) => {
        const got = await spendThirty(a!);
        assert.deepEqual(tally(got), { 401: 20, 407: 10 });
        const [api0, listener0] = [audited(a!, 'auth.failed'), audited(a!, 'listener.auth_failed')];
        assert.deepEqual([api0, listener0], [20, 10]);
        await assertSpent(a!);
        assert.deepEqual([audited(a!, 'auth.failed'), audited(a!, 'listener.auth_failed')], [20, 10]);
      }));
  }

  test('a request without a key is not a guess: it is refused without spending the budget', () =>
    using([app({ ROTA_AUTH_FAILURE_LIMIT: '2/minute' })], async ([a]) => {
      for (let i = 0; i < 5; i++) {
        assert.equal((await a!.app.inject({ url: '/api/v1/stats' })).statusCode, 401);
        assert.equal((await viaProxy(a!.httpPort, TARGET)).status, 407);
      }
      assert.equal((await api(a!, KEY)).statusCode, 200);
      assert.equal((await api(a!, 'nope')).statusCode, 401);
    }));
});

describe('two instances sharing one Redis share the budget', () => {
  test('guesses spread over both are held to one budget, in turn and all at once', () =>
    using(
      [
        app({ ...DEFAULT_LIMITS, ROTA_REDIS_URL: redis.url }),
        app({ ...DEFAULT_LIMITS, ROTA_REDIS_URL: redis.url }),
      ],
      async ([a, b]) => {
        assert.deepEqual(tally(await spendThirty(a!, b!)), { 401: 20, 407: 10 });
        await assertSpent(a!);
        await assertSpent(b!);
        await flusher.flushall();
        const burst = await Promise.all([
          ...Array.from({ length: 100 }, (_, i) =>
            api(i % 2 ? a! : b!, `burst-${i}`).then((r) => r.statusCode),
          ),
          ...Array.from({ length: 100 }, (_, i) => wrongViaHttp(i % 2 ? a! : b!, i).then((r) => r.status)),
        ]);
        const evaluated = burst.filter((s) => s === 401 || s === 407).length;
        assert.equal(evaluated, 30, `one budget of 30 across both: ${JSON.stringify(tally(burst))}`);
        assert.equal(burst.length - evaluated, burst.filter((s) => s === 429).length);
      },
    ));
});
