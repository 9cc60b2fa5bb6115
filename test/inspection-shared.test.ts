import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { json, makeApp, type TestApp } from './helpers/app.ts';
import { startRedis, type TestRedis } from './helpers/redis.ts';

/**
 * Two instances on one SQLite store and one Redis (redis-server): a `PUT inspection` made on one is what
 * the other serves and decides with within 1 s (the settings notice on the change bus), and an instance
 * started later reads it from the store.
 */

let redis: TestRedis;
let dir: string;
const apps: TestApp[] = [];

async function instance(): Promise<TestApp> {
  const t = await makeApp({ ROTA_STORAGE_PATH: join(dir, 'rota.db'), ROTA_REDIS_URL: redis.url });
  apps.push(t);
  return t;
}

async function within(ms: number, check: () => Promise<boolean>): Promise<number> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - t0;
}

async function hosts(t: TestApp): Promise<string[]> {
  const res = await t.app.inject({ url: '/api/v1/inspection' });
  return (res.json().data as { hosts: string[] }).hosts;
}

before(async () => {
  redis = await startRedis();
  dir = await mkdtemp(join(tmpdir(), 'rota-inspection-shared-'));
});

after(async () => {
  for (const t of apps) await t.close();
  await redis.close();
  await rm(dir, { recursive: true, force: true });
});

describe('inspection settings across instances (Redis change bus)', () => {
  it('a PUT on one instance is served and applied by the other within 1 s', async () => {
    const [a, b] = [await instance(), await instance()];
    assert.equal(b.services.inspectionSettings.decide('www.shared.example', undefined), false);
    const res = await a.app.inject({
      method: 'PUT',
      url: '/api/v1/inspection',
      ...json({ hosts: ['*.shared.example'], passthrough: ['pay.shared.example'] }),
    });
    assert.equal(res.statusCode, 200, res.body);
    await within(1_000, async () => (await hosts(b)).includes('*.shared.example'));
    const s = b.services.inspectionSettings;
    assert.equal(s.decide('www.shared.example', undefined), true);
    assert.equal(s.decide('pay.shared.example', 'on'), false);

    await a.app.inject({ method: 'PUT', url: '/api/v1/inspection', ...json({ hosts: [] }) });
    await within(1_000, async () => (await hosts(b)).length === 0);
    assert.equal(s.decide('www.shared.example', undefined), false);

    const c = await instance();
    const view = (await c.app.inject({ url: '/api/v1/inspection' })).json().data;
    assert.deepEqual(view.passthrough, ['pay.shared.example'], 'a later instance reads it from the store');
    assert.equal(view.hosts_source, 'storage');
  });
});
