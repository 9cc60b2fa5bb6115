import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { type RunningServer, startServer } from './helpers/server.ts';

const dir = mkdtempSync(join(tmpdir(), 'rota-restart-'));
const running = new Set<RunningServer>();
after(async () => {
  for (const s of running) await s.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function start(env: Record<string, string>): Promise<RunningServer> {
  const s = await startServer(env);
  running.add(s);
  return s;
}

async function stop(s: RunningServer, signal: NodeJS.Signals = 'SIGTERM') {
  const info = await s.stop(signal);
  running.delete(s);
  return info;
}

interface Json {
  data: Record<string, unknown>;
  storage_backend?: string;
}

async function api(s: RunningServer, path: string, body?: unknown) {
  const res = await fetch(`${s.url}/api/v1${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, json: (await res.json()) as Json };
}

interface Item {
  id: string;
  url: string;
  has_credentials: boolean;
}

async function list(s: RunningServer): Promise<Item[]> {
  const res = await api(s, '/proxies?page_size=100');
  assert.equal(res.status, 200);
  return res.json.data.items as Item[];
}

function rawBytes(path: string): Buffer {
  return Buffer.concat(
    ['', '-wal', '-shm'].filter((x) => existsSync(path + x)).map((x) => readFileSync(path + x)),
  );
}

describe('restart with SQLite storage (real server process)', () => {
  it('keeps ids, order and encrypted credentials across a SIGTERM restart', async () => {
    const db = join(dir, 'graceful', 'rota.db');
    const env = { ROTA_STORAGE_PATH: db };
    const bodies = [
      { url: 'http://first-user:Fir5t-Secret-Pw@10.0.0.1:3128' },
      { url: 'socks5://10.0.0.2:1080' },
      { url: 'https://10.0.0.3:8443', username: 'third-user', password: 'Th1rd-Secret-Pw', tags: ['t'] },
      { url: 'http://10.0.0.4:3128', country: 'de', weight: 3 },
    ];
    let s = await start(env);
    assert.equal((await api(s, '/status')).json.storage_backend, 'sqlite', 'a bare object');
    const ids: string[] = [];
    for (const body of bodies) {
      const res = await api(s, '/proxies', body);
      assert.equal(res.status, 201);
      ids.push(res.json.data.id as string);
    }
    const before = await list(s);
    assert.deepEqual(
      before.map((i) => i.id),
      ids,
    );
    assert.deepEqual(await stop(s), { code: 0, signal: null });

    const bytes = rawBytes(db);
    for (const secret of ['first-user', 'Fir5t-Secret-Pw', 'third-user', 'Th1rd-Secret-Pw']) {
      assert.ok(!bytes.includes(Buffer.from(secret)), `${secret} is not stored in clear`);
    }
    assert.equal(statSync(`${db}.key`).mode & 0o777, 0o600);

    s = await start(env);
    assert.deepEqual(await list(s), before, 'same ids, same order, same fields');
    assert.equal((await api(s, '/status')).json.storage_backend, 'sqlite');
    const dup = await api(s, '/proxies', { url: 'https://10.0.0.3:8443', username: 'third-user' });
    assert.equal(dup.status, 409, 'the identity index survives the restart too');
    await stop(s);
  });

  it('keeps a proxy acknowledged with 201 right before kill -9', async () => {
    const db = join(dir, 'killed', 'rota.db');
    const env = { ROTA_STORAGE_PATH: db };
    let s = await start(env);
    const res = await fetch(`${s.url}/api/v1/proxies`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'http://u:killed-pw@10.9.9.9:3128' }),
    });
    assert.equal(res.status, 201);
    s.proc.kill('SIGKILL');
    const location = res.headers.get('location') ?? '';
    const exit = await stop(s);
    assert.equal(exit.signal, 'SIGKILL');
    assert.ok(existsSync(`${db}-wal`), 'the write is only in the WAL: no clean shutdown happened');
    const id = location.split('/').at(-1) ?? '';
    assert.match(id, /^[0-9a-f-]{36}$/);

    s = await start(env);
    const items = await list(s);
    assert.deepEqual(
      items.map((i) => [i.id, i.url, i.has_credentials]),
      [[id, 'http://10.9.9.9:3128', true]],
    );
    const got = await api(s, `/proxies/${id}`);
    assert.equal(got.status, 200);
    assert.equal(got.json.data.id, id);
    await stop(s);
  });
});
