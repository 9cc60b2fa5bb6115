import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { json, makeApp, type TestApp } from './helpers/app.ts';
import { startRedis, type TestRedis } from './helpers/redis.ts';

/**
 * Two instances on one SQLite store and one Redis (redis-server): a `PUT policies` made on one applies on
 * the other within 1 s; a session pinned on one holds on the other, and ending it on one ends it on both;
 * a gateway session's provider session moved on one is the one every instance renders, one started later
 * included.
 */

let redis: TestRedis;
let dir: string;
const apps: TestApp[] = [];

async function instance(): Promise<TestApp> {
  const t = await makeApp({
    ROTA_STORAGE_PATH: join(dir, 'rota.db'),
    ROTA_REDIS_URL: redis.url,
    ROTA_SSRF_ALLOW: '127.0.0.0/8',
  });
  apps.push(t);
  return t;
}

async function within(ms: number, check: () => Promise<boolean> | boolean): Promise<number> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - t0;
}

const rotate = async (t: TestApp, query: string) =>
  (await t.app.inject({ url: `/api/v1/rotate?${query}` })).json().data as {
    id: string;
    policy: string | null;
  };

before(async () => {
  redis = await startRedis();
  dir = await mkdtemp(join(tmpdir(), 'rota-policies-shared-'));
});

after(async () => {
  for (const t of apps) await t.close();
  await redis.close();
  await rm(dir, { recursive: true, force: true });
});

describe('policies and sessions across instances (Redis change bus)', () => {
  it('a rule PUT on one instance applies on the other within 1 s, and on an instance started later', async () => {
    const [a, b] = [await instance(), await instance()];
    const tagged = await a.app.inject({
      method: 'POST',
      url: '/api/v1/proxies',
      ...json({ url: 'http://127.0.0.1:9', tags: ['res'] }),
    });
    assert.equal(tagged.statusCode, 201, tagged.body);
    await a.app.inject({ method: 'POST', url: '/api/v1/proxies', ...json({ url: 'http://127.0.0.1:10' }) });
    await within(1_000, () => b.services.pool.size === 2);
    const rules = [
      { name: 'shared-res', match: { hosts: ['*.shared.test'] }, proxies: { tags_any: ['res'] } },
    ];
    const put = await a.app.inject({ method: 'PUT', url: '/api/v1/policies', ...json({ rules }) });
    assert.equal(put.statusCode, 200, put.body);
    const took = await within(
      1_000,
      async () => (await rotate(b, 'host=www.shared.test')).policy === 'shared-res',
    );
    assert.ok(took <= 1_000);
    const resId = (tagged.json().data as { id: string }).id;
    for (let i = 0; i < 4; i++) assert.equal((await rotate(b, 'host=www.shared.test')).id, resId);
    const c = await instance();
    assert.equal((await rotate(c, 'host=x.shared.test')).policy, 'shared-res', 'read from the store');
  });

  it('a session pinned on one instance holds on the other; ended on one, it is gone on both', async () => {
    const [a, b] = [apps[0] as TestApp, apps[1] as TestApp];
    const pinned = (await rotate(a, 'session_id=shared-s&host=other.test')).id;
    await within(1_000, () => b.services.selector.sessionTable.list().some((s) => s.id === 'shared-s'));
    for (let i = 0; i < 4; i++)
      assert.equal((await rotate(b, 'session_id=shared-s&host=other.test')).id, pinned);
    const del = await b.app.inject({ method: 'DELETE', url: '/api/v1/sessions/shared-s' });
    assert.equal(del.statusCode, 204);
    await within(1_000, () => !a.services.selector.sessionTable.list().some((s) => s.id === 'shared-s'));
  });

  it('a provider session moved on one instance is rendered by the other, and by one started later', async () => {
    const [a, b] = [await instance(), await instance()];
    const add = await a.app.inject({
      method: 'POST',
      url: '/api/v1/proxies',
      ...json({ url: 'http://127.0.0.1:11', username_template: 'acme-session-{session}', password: 'p' }),
    });
    assert.equal(add.statusCode, 201, add.body);
    const gw = (add.json() as { data: { id: string } }).data.id;
    const render = (t: TestApp) => t.services.providerSessions.id('gen-sess', gw);
    assert.equal(render(a), render(b), 'the same derivation everywhere');
    const before = render(a);
    a.services.providerSessions.bump('gen-sess', gw);
    a.services.providerSessions.bump('gen-sess', gw);
    const moved = render(a);
    assert.notEqual(moved, before);
    await within(1_000, () => render(b) === moved);
    const c = await instance();
    await within(2_000, () => render(c) === moved);
  });
});
