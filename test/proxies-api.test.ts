import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { json, makeApp, type TestApp } from './helpers/app.ts';

const SECRET = 'S3cr3t-pa55word';

describe('proxies API (inject)', () => {
  let t: TestApp;
  before(async () => {
    t = await makeApp();
  });
  after(async () => t.close());

  it('adds a proxy, normalises the URL and moves user-info out of it', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/proxies',
      ...json({ url: `HTTP://alice:${SECRET}@Proxy.Example.COM:3128` }),
    });
    assert.equal(res.statusCode, 201);
    const body = res.json();
    assert.equal(body.status, 'success');
    assert.equal(body.data.url, 'http://proxy.example.com:3128');
    assert.equal(body.data.protocol, 'http');
    assert.equal(body.data.status, 'active');
    assert.equal(body.data.health, 'unknown');
    assert.equal(body.data.has_credentials, true);
    assert.match(body.data.id, /^[0-9a-f-]{36}$/);
    assert.equal(body.meta.request_id, res.headers['x-request-id']);
    assert.ok(!res.body.includes(SECRET));
    assert.ok(!res.body.includes('alice'));
  });

  it('answers 409 for the same normalised URL and username', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/proxies',
      ...json({ url: 'http://proxy.example.com:3128', username: 'alice', password: 'other' }),
    });
    assert.equal(res.statusCode, 409);
    assert.equal(res.json().error.code, 'PROXY_ALREADY_EXISTS');
    const other = await t.app.inject({
      method: 'POST',
      url: '/api/v1/proxies',
      ...json({ url: 'http://proxy.example.com:3128', username: 'bob' }),
    });
    assert.equal(other.statusCode, 201, 'another username is another identity');
  });

  it('accepts every protocol and the optional fields', async () => {
    for (const scheme of ['https', 'socks4', 'socks4a', 'socks5', 'socks5h']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/proxies',
        ...json({ url: `${scheme}://10.0.0.1:1080`, weight: 2.5, country: 'de', tags: ['a'] }),
      });
      assert.equal(res.statusCode, 201, scheme);
      assert.equal(res.json().data.protocol, scheme);
      assert.equal(res.json().data.country, 'DE');
      assert.equal(res.json().data.weight, 2.5);
    }
  });

  it('lists in creation order with paging', async () => {
    const res = await t.app.inject({ url: '/api/v1/proxies?page=1&page_size=2' });
    assert.equal(res.statusCode, 200);
    const d = res.json().data;
    assert.equal(d.items.length, 2);
    assert.equal(d.total, 7);
    assert.equal(d.has_next, true);
    assert.equal(d.has_prev, false);
    assert.equal(d.items[0].url, 'http://proxy.example.com:3128');
    const p4 = (await t.app.inject({ url: '/api/v1/proxies?page=4&page_size=2' })).json().data;
    assert.equal(p4.items.length, 1);
    assert.equal(p4.has_next, false);
    assert.equal(p4.items[0].protocol, 'socks5h');
  });

  it('filters by status and health', async () => {
    const active = (await t.app.inject({ url: '/api/v1/proxies?status_filter=active' })).json().data;
    assert.equal(active.total, 7);
    const unknown = (await t.app.inject({ url: '/api/v1/proxies?status_filter=unknown' })).json().data;
    assert.equal(unknown.total, 7);
    const healthy = (await t.app.inject({ url: '/api/v1/proxies?status_filter=healthy' })).json().data;
    assert.equal(healthy.total, 0);
  });

  it('gets and deletes one proxy, then 404s', async () => {
    const list = (await t.app.inject({ url: '/api/v1/proxies?page_size=100' })).json().data;
    const id = list.items.at(-1).id;
    const got = await t.app.inject({ url: `/api/v1/proxies/${id}` });
    assert.equal(got.statusCode, 200);
    assert.equal(got.json().data.id, id);
    const del = await t.app.inject({ method: 'DELETE', url: `/api/v1/proxies/${id}` });
    assert.equal(del.statusCode, 204);
    assert.equal(del.body, '');
    const again = await t.app.inject({ method: 'DELETE', url: `/api/v1/proxies/${id}` });
    assert.equal(again.statusCode, 404);
    assert.equal(again.json().error.code, 'PROXY_NOT_FOUND');
    const gone = await t.app.inject({ url: `/api/v1/proxies/${id}` });
    assert.equal(gone.statusCode, 404);
  });

  it('streams NDJSON from export and stream', async () => {
    for (const path of ['export', 'stream']) {
      const res = await t.app.inject({ url: `/api/v1/proxies/${path}` });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /application\/x-ndjson/);
      const lines = res.body
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.equal(lines.length, 6);
      assert.equal(lines[0].url, 'http://proxy.example.com:3128');
      assert.ok(!res.body.includes(SECRET));
    }
    const filtered = await t.app.inject({ url: '/api/v1/proxies/export?status_filter=dead' });
    assert.equal(filtered.body, '');
  });

  it('never logs the credentials', () => {
    const all = t.logs.join('\n');
    assert.ok(!all.includes(SECRET), 'password leaked into logs');
    assert.ok(
      t.logs.some((l) => l.includes('"audit":true') && l.includes('proxy.add')),
      'audit line written',
    );
  });
});
