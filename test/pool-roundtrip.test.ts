/**
 * Issue 36, "a pool that round-trips", with the real `rota` command and real servers:
 * `rota proxies export --with-credentials | rota proxies import -` from a SQLite instance into an empty
 * PostgreSQL one, and from there into an empty SQLite one, gives back the same pool (URLs, weights,
 * countries, tags, labels, gateway templates), and the restored credentials work (health checks through
 * fixture proxies that demand them pass). The export with credentials is audit-logged and needs the key.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { GENEROUS_LIMITS } from './helpers/app.ts';
import { startPostgres, type TestPostgres } from './helpers/postgres.ts';
import { type RunningServer, startServer } from './helpers/server.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const KEY = 'roundtrip-key-0123456789abcdef';
const PW_A = 'Pw-A-secret-7731';
const PW_B = 'Pw-B-secret-9902';
const USER_A = 'cust-acme-zone-res-session-a1b2c3d4';

let target: TargetServer;
let proxyA: ForwardProxy;
let proxyB: ForwardProxy;
let pgServer: TestPostgres;
const servers: RunningServer[] = [];
const dir = mkdtempSync(join(tmpdir(), 'rota-roundtrip-'));

const urlOf = (p: ForwardProxy) => `http://127.0.0.1:${p.port}`;

function env(extra: Record<string, string>): Record<string, string> {
  return {
    ...GENEROUS_LIMITS,
    ROTA_REQUIRE_AUTH: 'true',
    ROTA_API_KEY: KEY,
    ROTA_SSRF_ALLOW: '127.0.0.0/8',
    ROTA_HEALTH_CHECK_URL: target.url('/json').href,
    ROTA_TIMEOUT: '3',
    ROTA_CONNECT_TIMEOUT_S: '1',
    ...extra,
  };
}

async function start(extra: Record<string, string>): Promise<RunningServer> {
  const s = await startServer(env(extra));
  servers.push(s);
  return s;
}

async function api(s: RunningServer, method: string, path: string, body?: unknown) {
  const res = await fetch(`${s.url}${path}`, {
    method,
    headers: { 'x-api-key': KEY, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) as { data: unknown } };
}

/** `rota proxies export --with-credentials | rota proxies import -`, from one server to another. */
function pipe(from: RunningServer, to: RunningServer): Promise<{ code: number | null; out: string }> {
  const rota = `'${process.execPath}' bin/rota`;
  const script = `ROTA_URL=${from.url} ${rota} proxies export --with-credentials | ROTA_URL=${to.url} ${rota} proxies import -`;
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ROTA_')));
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-o', 'pipefail', '-c', script], {
      cwd: ROOT,
      env: { ...base, ROTA_API_KEY: KEY },
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    child.stderr.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

interface Line {
  url: string;
  weight: number;
  country: string | null;
  tags: string[];
  label: string | null;
  display_label: string | null;
  kind: string;
  has_credentials: boolean;
}

/** The pool as export shows it, without what differs between instances (ids, times, stats). */
async function pool(s: RunningServer): Promise<string[]> {
  const res = await api(s, 'GET', '/api/v1/proxies/export');
  assert.equal(res.status, 200);
  return res.text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const p = JSON.parse(l) as Line;
      const { url, weight, country, tags, label, display_label, kind, has_credentials } = p;
      return JSON.stringify({ url, weight, country, tags, label, display_label, kind, has_credentials });
    })
    .sort();
}

async function healthAll(s: RunningServer): Promise<Map<string, string>> {
  const res = await api(s, 'POST', '/api/v1/proxies/health-check', {});
  assert.equal(res.status, 200, res.text);
  const ids = (await api(s, 'GET', '/api/v1/proxies?page_size=100')).json().data as {
    items: { id: string; url: string; display_label: string | null }[];
  };
  const byId = new Map(ids.items.map((p) => [p.id, `${p.url} ${p.display_label ?? ''}`]));
  const out = new Map<string, string>();
  for (const r of res.json().data as { proxy_id: string; status: string }[]) {
    out.set(byId.get(r.proxy_id) ?? r.proxy_id, r.status);
  }
  return out;
}

before(async () => {
  [target, proxyA, proxyB, pgServer] = await Promise.all([
    startTarget(),
    startForwardProxy({ auth: { username: USER_A, password: PW_A } }),
    startForwardProxy({ auth: { username: 'bob', password: PW_B } }),
    startPostgres(),
  ]);
});

after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await Promise.all([target?.close(), proxyA?.close(), proxyB?.close(), pgServer?.destroy()]);
  rmSync(dir, { recursive: true, force: true });
});

describe('a pool that round-trips (real CLI, SQLite -> PostgreSQL -> SQLite)', () => {
  test('export --with-credentials | import - gives back the same pool, credentials working', async () => {
    const sqlite = await start({ ROTA_STORAGE_PATH: join(dir, 'a.db'), ROTA_LOG_LEVEL: 'info' });
    const adds = [
      { url: urlOf(proxyA), username: USER_A, password: PW_A, weight: 3, country: 'de', tags: ['res', 'eu'] },
      // The same address with another username: shown apart by its label, never by its password.
      {
        url: urlOf(proxyA),
        username: 'cust-acme-zone-dc-session-z9y8x7w6',
        password: 'wrong',
        label: 'dc zone',
      },
      { url: urlOf(proxyB), username: 'bob', password: PW_B, tags: ['b'] },
      { url: `socks5://127.0.0.1:${proxyB.port}`, username_template: 'gw-acme-session-{session}' },
    ];
    for (const body of adds) assert.equal((await api(sqlite, 'POST', '/api/v1/proxies', body)).status, 201);
    const before = await pool(sqlite);
    assert.equal(before.length, 4);
    const labels = before.map((l) => (JSON.parse(l) as Line).display_label).sort();
    assert.deepEqual(labels, ['bo…', 'cust-acme-zone-res', 'dc zone', 'gw-acme']);

    const pgUrl = await pgServer.createDatabase('roundtrip');
    const postgres = await start({
      ROTA_DATABASE_URL: pgUrl,
      ROTA_SECRET_KEY: randomBytes(32).toString('hex'),
    });
    const first = await pipe(sqlite, postgres);
    assert.equal(first.code, 0, first.out);
    assert.match(first.out, /created 4, duplicates 0, invalid 0/);
    assert.deepEqual(await pool(postgres), before);

    const health = await healthAll(postgres);
    assert.equal(
      health.get(`${urlOf(proxyA)} cust-acme-zone-res`),
      'working',
      'A with its restored password',
    );
    assert.equal(health.get(`${urlOf(proxyB)} bo…`), 'working', 'B with its restored password');
    assert.equal(health.get(`${urlOf(proxyA)} dc zone`), 'failed', 'a wrong password stays wrong');

    const back = await start({ ROTA_STORAGE_PATH: join(dir, 'c.db') });
    const second = await pipe(postgres, back);
    assert.equal(second.code, 0, second.out);
    assert.deepEqual(await pool(back), before);
    assert.equal((await healthAll(back)).get(`${urlOf(proxyB)} bo…`), 'working');

    // A second import of the same backup adds nothing.
    const again = await pipe(postgres, back);
    assert.match(again.out, /created 0, duplicates 4, invalid 0/);

    // Audited, and no password in any answer or log line.
    assert.match(sqlite.output(), /audit proxy\.export_credentials/);
    for (const s of servers) {
      for (const secret of [PW_A, PW_B]) assert.equal(s.output().includes(secret), false);
    }
    for (const out of [first.out, second.out, again.out]) assert.equal(out.includes(PW_A), false);
  });

  test('export with credentials needs the API key when auth is on; without it no credential leaves', async () => {
    const s = servers[0] ?? (await start({}));
    const res = await fetch(`${s.url}/api/v1/proxies/export?credentials=true`);
    assert.equal(res.status, 401);
    const plain = await api(s, 'GET', '/api/v1/proxies/export');
    assert.equal(plain.text.includes(PW_A), false);
    assert.equal(plain.text.includes('"password"'), false);
    assert.equal(plain.text.includes(USER_A), false);
    const full = await api(s, 'GET', '/api/v1/proxies/export?credentials=true');
    assert.equal(full.text.includes(PW_A), true);
    assert.equal(full.text.includes('gw-acme-session-{session}'), true);
  });
});
