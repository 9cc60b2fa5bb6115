import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { json, makeApp, type TestApp } from './helpers/app.ts';

/** Every bad input gets its documented status and code, and the pool is unchanged afterwards. */
describe('bad input', () => {
  let t: TestApp;
  let baseline: string;
  before(async () => {
    t = await makeApp();
    await t.app.inject({ method: 'POST', url: '/api/v1/proxies', ...json({ url: 'http://1.2.3.4:8080' }) });
    baseline = (await t.app.inject({ url: '/api/v1/proxies/export' })).body;
  });
  after(async () => t.close());

  async function poolUnchanged() {
    assert.equal((await t.app.inject({ url: '/api/v1/proxies/export' })).body, baseline);
  }

  function post(payload: string | Buffer, contentType = 'application/json') {
    return t.app.inject({
      method: 'POST',
      url: '/api/v1/proxies',
      headers: { 'content-type': contentType },
      payload,
    });
  }

  const badUrls: [string, string][] = [
    ['http://', 'empty host'],
    ['ftp://h:1', 'unknown scheme'],
    ['http://h:99999', 'port out of range'],
    ['socks5://:1080', 'missing host'],
    ['http://h', 'missing port'],
    ['http://h:0', 'port zero'],
    ['http://bad_host!:80', 'bad host'],
    ['not a url', 'unparsable'],
    ['http://h:80/path', 'path not allowed'],
    ['http://[::1:80', 'broken IPv6'],
    ['http://999.1.1.1:80', 'bad IPv4'],
  ];
  for (const [url, why] of badUrls) {
    it(`400 INVALID_PROXY_FORMAT for ${JSON.stringify(url)} (${why})`, async () => {
      const res = await post(JSON.stringify({ url }));
      assert.equal(res.statusCode, 400, res.body);
      const b = res.json();
      assert.equal(b.error.code, 'INVALID_PROXY_FORMAT');
      assert.ok(Array.isArray(b.detail) && b.detail.length > 0);
      await poolUnchanged();
    });
  }

  it('400 INVALID_PROXY_FORMAT when url is missing or not a string', async () => {
    for (const body of [{}, { url: 12 }]) {
      const res = await post(JSON.stringify(body));
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().error.code, 'INVALID_PROXY_FORMAT');
    }
    await poolUnchanged();
  });

  it('422 json_invalid for malformed JSON', async () => {
    const res = await post('{"url": "http://a:1",');
    assert.equal(res.statusCode, 422);
    const b = res.json();
    assert.equal(b.error.code, 'VALIDATION_ERROR');
    assert.equal(b.detail[0].type, 'json_invalid');
    assert.equal(b.meta.request_id, res.headers['x-request-id']);
    await poolUnchanged();
  });

  it('a malformed body is never quoted back (it may hold a secret)', async () => {
    const res = await post('{"url":"http://h:1","password": hunter2SECRET}');
    assert.equal(res.statusCode, 422);
    assert.ok(!res.body.includes('hunter2'), res.body);
    assert.match(res.json().detail[0].msg, /^Invalid JSON/);
  });

  it("an unknown field's value is not echoed", async () => {
    const res = await post(JSON.stringify({ url: 'http://5.6.7.8:1', pwd: 'SECRETPWD' }));
    assert.equal(res.statusCode, 422);
    assert.ok(!res.body.includes('SECRETPWD'));
  });

  it('422 for an empty JSON body', async () => {
    const res = await post('');
    assert.equal(res.statusCode, 422);
    assert.equal(res.json().detail[0].type, 'json_invalid');
  });

  it('422 json_invalid for a non-UTF-8 body', async () => {
    const res = await post(
      Buffer.from([0x7b, 0x22, 0x75, 0x72, 0x6c, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
    );
    assert.equal(res.statusCode, 422);
    assert.equal(res.json().detail[0].type, 'json_invalid');
    await poolUnchanged();
  });

  it('422 extra_forbidden and wrong types, every failing field reported', async () => {
    const res = await post(JSON.stringify({ url: 'http://5.6.7.8:1', bogus: 1, weight: 'x', tags: 'y' }));
    assert.equal(res.statusCode, 422);
    const b = res.json();
    assert.equal(b.error.code, 'VALIDATION_ERROR');
    const types = b.detail.map((d: { type: string; loc: string[] }) => `${d.loc.join('.')}:${d.type}`).sort();
    assert.deepEqual(types, ['body.bogus:extra_forbidden', 'body.tags:list_type', 'body.weight:float_type']);
    assert.deepEqual(b.error.details, b.detail);
    await poolUnchanged();
  });

  it('422 for a weight of 0 and a bad country', async () => {
    const res = await post(JSON.stringify({ url: 'http://5.6.7.8:1', weight: 0, country: 'Germany' }));
    assert.equal(res.statusCode, 422);
    assert.equal(res.json().detail.length, 2);
    await poolUnchanged();
  });

  it('redacts a password from validation errors', async () => {
    const res = await post(JSON.stringify({ url: 'http://5.6.7.8:1', password: 12345678, extra: true }));
    assert.equal(res.statusCode, 422);
    assert.ok(!res.body.includes('12345678'));
  });

  it('413 PAYLOAD_TOO_LARGE for a 10 MB body', async () => {
    const res = await post(JSON.stringify({ url: 'http://5.6.7.8:1', tags: ['x'.repeat(10 * 1024 * 1024)] }));
    assert.equal(res.statusCode, 413);
    assert.equal(res.json().error.code, 'PAYLOAD_TOO_LARGE');
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    await poolUnchanged();
  });

  it('415 UNSUPPORTED_MEDIA_TYPE for a text body', async () => {
    const res = await post('url=http://a:1', 'text/plain');
    assert.equal(res.statusCode, 415);
    assert.equal(res.json().error.code, 'UNSUPPORTED_MEDIA_TYPE');
    await poolUnchanged();
  });

  it('415 for a text body on DELETE, and it is documented there', async () => {
    const res = await t.app.inject({
      method: 'DELETE',
      url: '/api/v1/proxies/00000000-0000-4000-8000-000000000000',
      headers: { 'content-type': 'text/plain' },
      payload: 'x',
    });
    assert.equal(res.statusCode, 415);
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    assert.ok(doc.paths['/api/v1/proxies/{proxy_id}'].delete.responses['415']);
    await poolUnchanged();
  });

  it('422 for page=0, page_size=101 and an unknown status_filter, all reported', async () => {
    const res = await t.app.inject({ url: '/api/v1/proxies?page=0&page_size=101&status_filter=weird' });
    assert.equal(res.statusCode, 422);
    const b = res.json();
    assert.equal(b.error.code, 'VALIDATION_ERROR');
    const locs = b.detail.map((d: { loc: string[] }) => d.loc.join('.')).sort();
    assert.deepEqual(locs, ['query.page', 'query.page_size', 'query.status_filter']);
  });

  it('422 for a non-numeric page', async () => {
    const res = await t.app.inject({ url: '/api/v1/proxies?page=abc' });
    assert.equal(res.statusCode, 422);
    assert.equal(res.json().detail[0].type, 'int_type');
  });

  it('404 NOT_FOUND for an unknown route and 405 for a wrong method, with envelope and headers', async () => {
    const nf = await t.app.inject({ url: '/api/v1/nope' });
    assert.equal(nf.statusCode, 404);
    assert.equal(nf.json().error.code, 'NOT_FOUND');
    assert.equal(nf.headers['x-frame-options'], 'DENY');
    const na = await t.app.inject({ method: 'PUT', url: '/api/v1/proxies' });
    assert.equal(na.statusCode, 405);
    assert.equal(na.json().error.code, 'METHOD_NOT_ALLOWED');
    assert.match(String(na.headers.allow), /GET/);
    assert.equal(na.json().meta.request_id, na.headers['x-request-id']);
  });

  it("a path with a route of its own lists only that route's methods in Allow", async () => {
    for (const [url, allow] of [
      ['/api/v1/proxies/export', 'GET, HEAD'],
      ['/api/v1/proxies/stream', 'GET, HEAD'],
      ['/api/v1/proxies/health-check', 'POST'],
      ['/api/v1/proxies/test', 'POST'],
      ['/api/v1/proxies/some-id', 'GET, PATCH, DELETE, HEAD'],
      ['/api/v1/proxies', 'GET, POST, HEAD'],
    ] as const) {
      // PUT: no route of these paths takes it (PATCH /proxies/{id} would take /proxies/export as an id).
      const res = await t.app.inject({ method: 'PUT', url });
      assert.equal(res.statusCode, 405, url);
      assert.equal(res.headers.allow, allow, url);
      assert.deepEqual(res.json().error.details.allowed, allow.split(', '), url);
    }
  });

  it('an unknown QUERY gets the same 405 or 404 as any other method, with or without a body', async () => {
    for (const headers of [{}, { 'content-type': 'application/json' }]) {
      const payload = 'content-type' in headers ? '{}' : undefined;
      const na = await t.app.inject({ method: 'QUERY', url: '/api/v1/health', headers, payload });
      assert.equal(na.statusCode, 405, na.body);
      assert.equal(na.json().error.code, 'METHOD_NOT_ALLOWED');
      assert.match(String(na.headers.allow), /GET/);
      const nf = await t.app.inject({ method: 'QUERY', url: '/api/v1/nope', headers, payload });
      assert.equal(nf.statusCode, 404, nf.body);
      assert.equal(nf.json().error.code, 'NOT_FOUND');
    }
  });

  it('the process stays up: health still answers', async () => {
    const res = await t.app.inject({ url: '/api/v1/health' });
    assert.equal(res.statusCode, 200);
  });
});
