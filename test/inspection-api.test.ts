import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';
import { json, makeApp, type TestApp } from './helpers/app.ts';

/**
 * `GET`/`PUT /api/v1/inspection` and `GET /api/v1/inspection/ca.pem` over the real app: the round trip,
 * canonical patterns, every invalid value at its place, persistence across a restart on SQLite, the CA
 * download (a certificate, never a key) and the API key on all three.
 */

const dir = mkdtempSync(join(tmpdir(), 'rota-inspection-'));
const apps = new Set<TestApp>();
after(async () => {
  for (const t of apps) await t.close();
  rmSync(dir, { recursive: true, force: true });
});

async function app(env: Record<string, string> = {}): Promise<TestApp> {
  const t = await makeApp(env);
  apps.add(t);
  return t;
}

async function close(t: TestApp): Promise<void> {
  apps.delete(t);
  await t.close();
}

interface View {
  hosts: string[];
  passthrough: string[];
  hosts_source: string;
  ca_origin: string | null;
}

async function get(t: TestApp): Promise<View> {
  const res = await t.app.inject({ url: '/api/v1/inspection' });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data as View;
}

async function put(t: TestApp, body: unknown) {
  return t.app.inject({ method: 'PUT', url: '/api/v1/inspection', ...json(body) });
}

describe('inspection settings over the API', () => {
  it('GET starts from ROTA_INSPECT_HOSTS; PUT is partial, canonical, and applies at once', async () => {
    const t = await app({ ROTA_INSPECT_HOSTS: 'Shop.Example,*.corp.example' });
    assert.deepEqual(await get(t), {
      hosts: ['shop.example', '*.corp.example'],
      passthrough: [],
      hosts_source: 'environment',
      ca_origin: null,
    });
    const res = await put(t, { passthrough: ['Bank.Example.', '[2001:DB8::1]', 'bank.example'] });
    assert.equal(res.statusCode, 200, res.body);
    const expected = {
      hosts: ['shop.example', '*.corp.example'],
      passthrough: ['bank.example', '2001:db8::1'],
      hosts_source: 'environment',
      ca_origin: null,
    };
    assert.deepEqual(res.json().data, expected);
    assert.deepEqual(await get(t), expected);
    const s = t.services.inspectionSettings;
    assert.equal(s.decide('a.corp.example', undefined), true);
    assert.equal(s.decide('bank.example', 'on'), false);
    assert.equal((await put(t, { hosts: [] })).statusCode, 200);
    assert.equal((await get(t)).hosts_source, 'storage');
    assert.equal(s.decide('a.corp.example', undefined), false);
    assert.equal(s.decide('a.corp.example', 'on'), true);
    await close(t);
  });

  it('refuses invalid values with 400 INVALID_CONFIGURATION at their place, changing nothing', async () => {
    const t = await app();
    await put(t, { hosts: ['keep.example'] });
    const res = await put(t, {
      hosts: ['ok.example', 'a.*.example', 'ok2.example', ''],
      passthrough: ['x y'],
    });
    assert.equal(res.statusCode, 400, res.body);
    const body = res.json();
    assert.equal(body.error.code, 'INVALID_CONFIGURATION');
    const locs = (body.error.details as { loc: unknown[] }[]).map((d) => d.loc);
    assert.deepEqual(locs, [
      ['body', 'hosts', 3],
      ['body', 'hosts', 1],
      ['body', 'passthrough', 0],
    ]);
    const many = await put(t, { passthrough: Array.from({ length: 1_001 }, (_, i) => `h${i}.example`) });
    assert.equal(many.statusCode, 400);
    assert.deepEqual(many.json().error.details[0].loc, ['body', 'passthrough']);
    for (const bad of [{ hosts: 'a.example' }, { other: [] }, { hosts: [1] }, ['a.example']]) {
      const r = await put(t, bad);
      assert.equal(r.statusCode, 400, JSON.stringify(bad));
      assert.equal(r.json().error.code, 'INVALID_CONFIGURATION');
    }
    assert.deepEqual((await get(t)).hosts, ['keep.example']);
    assert.deepEqual((await get(t)).passthrough, []);
    await close(t);
  });

  it('keeps a PUT across a restart on SQLite; a list not PUT keeps following its variable', async () => {
    const db = join(dir, 'rota.db');
    let t = await app({ ROTA_STORAGE_PATH: db, ROTA_INSPECT_HOSTS: 'env-one.example' });
    await put(t, { passthrough: ['p.example'] });
    await close(t);
    t = await app({ ROTA_STORAGE_PATH: db, ROTA_INSPECT_HOSTS: 'env-two.example' });
    assert.deepEqual(await get(t), {
      hosts: ['env-two.example'],
      passthrough: ['p.example'],
      hosts_source: 'environment',
      ca_origin: null,
    });
    await put(t, { hosts: ['*.put.example'] });
    await close(t);
    t = await app({ ROTA_STORAGE_PATH: db, ROTA_INSPECT_HOSTS: 'env-three.example' });
    const v = await get(t);
    assert.deepEqual([v.hosts, v.passthrough, v.hosts_source], [['*.put.example'], ['p.example'], 'storage']);
    assert.equal(t.services.inspectionSettings.decide('a.put.example', undefined), true);
    const status = (await t.app.inject({ url: '/api/v1/status' })).json() as { config_source: string };
    assert.equal(status.config_source, 'storage');
    await close(t);
  });

  it('refuses a bad ROTA_INSPECT_HOSTS at start, naming the variable', () => {
    assert.throws(
      () => loadConfig({ ROTA_INSPECT_HOSTS: 'fine.example, *.*.bad' }),
      (err: unknown) =>
        err instanceof ConfigError &&
        err.problems.length === 1 &&
        /^ROTA_INSPECT_HOSTS: "\*\.\*\.bad": /.test(err.problems[0] ?? ''),
    );
  });
});

describe('GET /api/v1/inspection/ca.pem', () => {
  it('serves the CA certificate as PEM, never a key; the view then says where the CA came from', async () => {
    const t = await app();
    const res = await t.app.inject({ url: '/api/v1/inspection/ca.pem' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['content-type'], 'application/x-pem-file');
    assert.match(String(res.headers['content-disposition']), /attachment; filename="rota-ca.pem"/);
    assert.match(res.body, /^-----BEGIN CERTIFICATE-----\n/);
    assert.doesNotMatch(res.body, /PRIVATE KEY/);
    const cert = new X509Certificate(res.body);
    assert.equal(cert.ca, true);
    assert.equal((await t.app.inject({ url: '/api/v1/inspection/ca.pem' })).body, res.body, 'one CA');
    assert.equal((await get(t)).ca_origin, 'memory');
    for (const url of ['/api/v1/inspection', '/openapi.json']) {
      assert.doesNotMatch((await t.app.inject({ url })).body, /PRIVATE KEY/, url);
    }
    await close(t);
  });

  it('needs the API key like the rest of the API when auth is on', async () => {
    const key = 'inspection-key-0123456789abcdef';
    const t = await app({ ROTA_REQUIRE_AUTH: 'true', ROTA_API_KEY: key });
    for (const url of ['/api/v1/inspection/ca.pem', '/api/v1/inspection']) {
      assert.equal((await t.app.inject({ url })).statusCode, 401, url);
      const ok = await t.app.inject({ url, headers: { 'x-api-key': key } });
      assert.equal(ok.statusCode, 200, url);
    }
    const putNoKey = await put(t, { hosts: [] });
    assert.equal(putNoKey.statusCode, 401);
    await close(t);
  });
});
