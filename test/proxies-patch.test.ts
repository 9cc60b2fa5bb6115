/**
 * PATCH /api/v1/proxies/{id} (issue 36) and the NDJSON export as import takes it, through the real app:
 * fields change in place (same id, same entry), null clears, 404 unknown, 409 a duplicate username, 422
 * an unknown field; credentials and templates never come back; the export with credentials is audited
 * and what export writes (with or without credentials) imports without an "additional property".
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { json, makeApp, type TestApp } from './helpers/app.ts';

const PW = 'Patch-Pw-55120';
const PW2 = 'Patch-Pw-77001';

describe('PATCH proxies and export/import (inject)', () => {
  let t: TestApp;
  let id: string;
  before(async () => {
    t = await makeApp();
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/proxies',
      ...json({ url: 'http://10.9.0.1:3128', username: 'acct-zone-a-session-k3j4h5g6', password: PW }),
    });
    assert.equal(res.statusCode, 201);
    id = res.json().data.id;
  });
  after(async () => t.close());

  const patch = (pid: string, body: unknown) =>
    t.app.inject({ method: 'PATCH', url: `/api/v1/proxies/${pid}`, ...json(body) });

  it('changes weight, country, tags, label and credentials; the id stays; nothing secret comes back', async () => {
    const res = await patch(id, {
      weight: 2.5,
      country: 'nl',
      tags: ['t1'],
      label: 'Zone A',
      password: PW2,
      username_template: 'acct-zone-a-session-{session}',
    });
    assert.equal(res.statusCode, 200, res.body);
    const d = res.json().data;
    assert.deepEqual(
      [d.id, d.weight, d.country, d.tags, d.label, d.display_label, d.kind, d.has_credentials],
      [id, 2.5, 'NL', ['t1'], 'Zone A', 'Zone A', 'gateway', true],
    );
    assert.equal(res.body.includes(PW2), false);
    assert.equal(res.body.includes('{session}'), false);
    const entry = t.services.pool.get(id);
    assert.equal(entry?.record.password, PW2);
    assert.equal(entry?.country, 'NL');
    const got = await t.app.inject({ method: 'GET', url: `/api/v1/proxies/${id}` });
    assert.equal(got.json().data.label, 'Zone A');
  });

  it('null clears a field; the derived label comes back', async () => {
    const res = await patch(id, { label: null, country: null, username_template: null });
    assert.equal(res.statusCode, 200);
    const d = res.json().data;
    assert.deepEqual([d.label, d.display_label, d.country, d.kind], [null, 'acct-zone-a', null, 'static']);
  });

  it('404 for an unknown id, 422 for an unknown or bad field, 409 for a duplicate username', async () => {
    assert.equal((await patch('00000000-0000-4000-8000-000000000000', { weight: 2 })).statusCode, 404);
    const unknown = await patch(id, { url: 'http://10.9.9.9:1' });
    assert.equal(unknown.statusCode, 422);
    assert.equal((await patch(id, { weight: 0 })).statusCode, 422);
    assert.equal((await patch(id, { country: 'NLD' })).statusCode, 422);
    const other = await t.app.inject({
      method: 'POST',
      url: '/api/v1/proxies',
      ...json({ url: 'http://10.9.0.1:3128', username: 'second', password: 'x' }),
    });
    assert.equal(other.statusCode, 201);
    const dup = await patch(other.json().data.id, { username: 'acct-zone-a-session-k3j4h5g6' });
    assert.equal(dup.statusCode, 409);
    assert.equal(dup.json().error.code, 'PROXY_ALREADY_EXISTS');
    assert.equal(dup.body.includes('acct-zone-a-session-k3j4h5g6'), false);
  });

  it('export?credentials=true holds the credentials and is audited; the audit line holds none', async () => {
    const before = t.logs.length;
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/proxies/export?credentials=true' });
    assert.equal(res.statusCode, 200);
    const lines = res.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const mine = lines.find((l) => l.id === id);
    assert.equal(mine.password, PW2);
    assert.equal(mine.username, 'acct-zone-a-session-k3j4h5g6');
    const audit = t.logs.slice(before).filter((l) => l.includes('proxy.export_credentials'));
    assert.equal(audit.length, 1);
    assert.equal(audit[0]?.includes(PW2), false);
    const plain = await t.app.inject({ method: 'GET', url: '/api/v1/proxies/export' });
    assert.equal(plain.body.includes(PW2), false);
    assert.equal(t.logs.slice(before).filter((l) => l.includes('proxy.export_credentials')).length, 1);
  });

  it('the PATCH audit line never holds the password or a template', async () => {
    await patch(id, { password: 'Audit-Pw-31337', username_template: 'acct-{session}-Tpl-Secret' });
    const lines = t.logs.filter((l) => l.includes('audit proxy.update'));
    assert.ok(lines.length > 0);
    for (const l of t.logs) {
      assert.equal(l.includes('Audit-Pw-31337'), false);
      assert.equal(l.includes('Tpl-Secret'), false);
    }
  });

  it('export?credentials=true needs the key whenever one is set, even with auth off', async () => {
    const keyed = await makeApp({ ROTA_API_KEY: 'export-key-0123456789abcdef' });
    try {
      await keyed.app.inject({
        method: 'POST',
        url: '/api/v1/proxies',
        ...json({ url: 'http://u:pw-9@127.0.0.1:9' }),
      });
      const url = '/api/v1/proxies/export?credentials=true';
      const refused = await keyed.app.inject({ url });
      assert.equal(refused.statusCode, 401);
      assert.ok(!refused.body.includes('pw-9'));
      const plain = await keyed.app.inject({ url: '/api/v1/proxies/export' });
      assert.equal(plain.statusCode, 200, 'without credentials it stays open as every read is');
      const withKey = await keyed.app.inject({
        url,
        headers: { 'x-api-key': 'export-key-0123456789abcdef' },
      });
      assert.ok(withKey.body.includes('pw-9'));
    } finally {
      await keyed.close();
    }
  });

  it('what export writes, import takes: read-only fields ignored, with or without credentials', async () => {
    const exported = await t.app.inject({ method: 'GET', url: '/api/v1/proxies/export?credentials=true' });
    const target = await makeApp();
    try {
      const res = await target.app.inject({
        method: 'POST',
        url: '/api/v1/proxies/import',
        headers: { 'content-type': 'application/x-ndjson' },
        payload: exported.body,
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json().data, { created: 2, duplicates: 0, invalid: [], invalid_count: 0 });
      const restored = target.services.pool
        .all()
        .map((e) => e.record.password)
        .sort();
      assert.deepEqual(restored, ['Audit-Pw-31337', 'x']);
      const plain = await t.app.inject({ method: 'GET', url: '/api/v1/proxies/export' });
      const again = await target.app.inject({
        method: 'POST',
        url: '/api/v1/proxies/import',
        headers: { 'content-type': 'application/x-ndjson' },
        payload: plain.body,
      });
      // Without credentials both lines are the address alone: one new entry, the other its duplicate.
      assert.deepEqual(again.json().data, { created: 1, duplicates: 1, invalid: [], invalid_count: 0 });
    } finally {
      await target.close();
    }
  });

  it('long credentials given in a URL come back through export and import whole', async () => {
    const source = await makeApp();
    const target = await makeApp();
    try {
      const [user, pass] = [`acct-${'u'.repeat(400)}`, `tok-${'p'.repeat(900)}`];
      const add = await source.app.inject({
        method: 'POST',
        url: '/api/v1/proxies',
        ...json({ url: `http://${user}:${pass}@127.0.0.1:9` }),
      });
      assert.equal(add.statusCode, 201, add.body);
      const exported = await source.app.inject({ url: '/api/v1/proxies/export?credentials=true' });
      const res = await target.app.inject({
        method: 'POST',
        url: '/api/v1/proxies/import',
        headers: { 'content-type': 'application/x-ndjson' },
        payload: exported.body,
      });
      assert.deepEqual(res.json().data, { created: 1, duplicates: 0, invalid: [], invalid_count: 0 });
      const [restored] = target.services.pool.all();
      assert.deepEqual([restored?.record.username, restored?.record.password], [user, pass]);
    } finally {
      await Promise.all([source.close(), target.close()]);
    }
  });
});
