/**
 * A real Rota process on PostgreSQL storage (ROTA_DATABASE_URL) while the database goes away and comes
 * back: writes answer 503 STORAGE_UNAVAILABLE, reads go on from memory, `/ready` is 503 until the database
 * answers again, and what was acknowledged is still there after a Rota restart.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { startPostgres } from './helpers/postgres.ts';
import { type RunningServer, startServer } from './helpers/server.ts';

const database = await startPostgres();
const running = new Set<RunningServer>();
after(async () => {
  for (const s of running) await s.stop('SIGKILL');
  await database.destroy();
});

async function start(env: Record<string, string>): Promise<RunningServer> {
  const s = await startServer(env);
  running.add(s);
  return s;
}

async function api(s: RunningServer, method: string, path: string, body?: unknown) {
  const res = await fetch(`${s.url}/api/v1${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

type Page = { data: { items: { id: string; url: string }[] } };

async function ids(s: RunningServer): Promise<string[]> {
  const res = await api(s, 'GET', '/proxies?page_size=100');
  assert.equal(res.status, 200);
  return (res.json as Page).data.items.map((i) => i.id);
}

async function readyWithin(s: RunningServer, ms: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const res = await api(s, 'GET', '/ready');
    if (res.status === 200) return Date.now() - started;
    if (Date.now() - started > ms) assert.fail(`/ready still ${res.status} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('Rota on PostgreSQL storage (real server process)', () => {
  it('answers 503 STORAGE_UNAVAILABLE to writes while PostgreSQL is gone, and recovers', async (t) => {
    const env = {
      ROTA_DATABASE_URL: await database.createDatabase('rota'),
      ROTA_SECRET_KEY: randomBytes(32).toString('hex'),
    };
    let rota = await start(env);
    assert.equal((await api(rota, 'GET', '/status')).json.storage_backend, 'postgres');
    const added = await api(rota, 'POST', '/proxies', { url: 'http://user:Secret-Pw-1@10.0.0.1:3128' });
    assert.equal(added.status, 201);
    const id = (added.json as { data: { id: string } }).data.id;

    await database.kill();
    const refused = await api(rota, 'POST', '/proxies', { url: 'http://10.0.0.2:3128' });
    assert.equal(refused.status, 503);
    assert.equal((refused.json as { error: { code: string } }).error.code, 'STORAGE_UNAVAILABLE');
    assert.equal((await api(rota, 'DELETE', `/proxies/${id}`)).status, 503, 'a removal is a write too');
    assert.deepEqual(await ids(rota), [id], 'reads go on from memory');
    const ready = await api(rota, 'GET', '/ready');
    assert.equal(ready.status, 503);
    assert.deepEqual(ready.json.checks, { proxy_pool_initialized: true, storage_connected: false });

    await assert.rejects(start(env), /exited \(2\)[\s\S]*STORAGE_UNAVAILABLE PostgreSQL is unavailable/);

    await database.start();
    t.diagnostic(`/ready 200 again ${await readyWithin(rota, 5000)} ms after PostgreSQL restarted`);
    const later = await api(rota, 'POST', '/proxies', { url: 'http://10.0.0.2:3128' });
    assert.equal(later.status, 201, 'writes work again');
    const before = await ids(rota);

    assert.equal((await rota.stop()).code, 0);
    running.delete(rota);
    rota = await start(env);
    assert.deepEqual(await ids(rota), before, 'everything acknowledged survives a Rota restart');
    assert.equal(before[0], id);
  });
});
