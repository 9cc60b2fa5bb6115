import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { InjectOptions } from 'fastify';
import { json, makeApp, type TestApp } from './helpers/app.ts';
import { addProxyBody, seriesOf } from './helpers/security.ts';

/** Hostile input is refused with a 4xx envelope, and afterwards nothing has changed. */
describe('hostile input', () => {
  let t: TestApp;
  let baseline: string;
  let config: string;
  before(async () => {
    t = await makeApp({ ROTA_MAX_BODY_BYTES: '65536' });
    await t.app.inject({ method: 'POST', url: '/api/v1/proxies', ...json(addProxyBody()) });
    baseline = (await t.app.inject({ url: '/api/v1/proxies/export' })).body;
    config = (await t.app.inject({ url: '/api/v1/config' })).json().data;
  });
  after(() => t.close());

  async function unchanged(): Promise<void> {
    assert.equal((await t.app.inject({ url: '/api/v1/proxies/export' })).body, baseline);
    assert.deepEqual((await t.app.inject({ url: '/api/v1/config' })).json().data, config);
  }

  async function refused(req: InjectOptions, ...status: number[]): Promise<void> {
    const res = await t.app.inject(req);
    const what = `${JSON.stringify(req).slice(0, 120)} → ${res.statusCode} ${res.body.slice(0, 200)}`;
    assert.ok(status.includes(res.statusCode), what);
    assert.equal(res.json().meta.request_id, res.headers['x-request-id']);
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
  }

  it('bodies: over the limit 413, nested 30,000 deep or with poisoned keys 4xx, other types 415', async () => {
    const url = '/api/v1/proxies';
    await refused({ method: 'POST', url, ...json({ url: 'x'.repeat(70_000) }) }, 413);
    const deep = `${'['.repeat(30_000)}${']'.repeat(30_000)}`;
    await refused(
      { method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: deep },
      400,
      422,
    );
    const nested = `{"url":"http://h:1","tags":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
    await refused(
      {
        method: 'PUT',
        url: '/api/v1/config',
        headers: { 'content-type': 'application/json' },
        payload: nested,
      },
      400,
      422,
    );
    for (const payload of [
      '{"__proto__":{"x":1}}',
      '{"constructor":{"prototype":{"x":1}}}',
      '{"url":1e999999}',
    ]) {
      const res = await t.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json' },
        payload,
      });
      assert.ok([400, 422].includes(res.statusCode), `${payload}: ${res.statusCode}`);
    }
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/jsonx',
    ]) {
      await refused(
        { method: 'POST', url, headers: { 'content-type': type }, payload: '{"url":"http://h:1"}' },
        415,
      );
    }
    assert.equal(({} as Record<string, unknown>).x, undefined, 'no prototype was polluted');
    await unchanged();
  });

  it('bounds: hours, page sizes, proxy URL length, ids and paths', async () => {
    for (const h of ['0', '721', '-1', '1e309', 'abc', '24.5', '9'.repeat(400), '']) {
      await refused({ url: `/api/v1/metrics/retries/timeseries?hours=${h}` }, 422);
      await refused({ url: `/metrics/retry?hours=${h}` }, 422);
    }
    for (const q of [
      'page_size=101',
      'page_size=0',
      'page_size=1e20',
      'page=0',
      'page=-5',
      `page=${'9'.repeat(300)}`,
    ]) {
      await refused({ url: `/api/v1/proxies?${q}` }, 422);
    }
    await refused(
      { method: 'POST', url: '/api/v1/proxies', ...json({ url: `http://${'a'.repeat(2050)}:80` }) },
      400,
    );
    await refused({ url: `/api/v1/proxies/${'x'.repeat(100)}` }, 422);
    await refused({ url: `/api/v1/proxies/${'%00'.repeat(10)}` }, 404);
    await unchanged();
  });

  // Fastify answers these before any hook; app.ts passes hooks.ts' frameworkErrorHandler as
  // `frameworkErrors` so that they still get the envelope and the request id.
  it('a path parameter over the router limit or a malformed path gets the envelope', async () => {
    await refused({ url: `/api/v1/proxies/${'x'.repeat(300)}` }, 422);
    await refused({ url: '/api/v1/proxies/%' }, 422, 404);
    await refused({ url: '/api/v1/proxies/%ff%fe' }, 422, 404);
    await unchanged();
  });

  it('10,000 distinct 404 paths add no metric series', async () => {
    const methods = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] as const;
    // The first 404 of each method and the first scrape create their series; none may follow.
    for (const method of methods) await t.app.inject({ method, url: '/warm-up' });
    await t.app.inject({ url: '/metrics' });
    const before = seriesOf((await t.app.inject({ url: '/metrics' })).body);
    for (let i = 0; i < 10_000; i++) {
      const res = await t.app.inject({
        method: methods[i % methods.length]!,
        url: `/${randomBytes(6).toString('hex')}/${i}?q=${i}`,
      });
      assert.ok(res.statusCode === 404 || res.statusCode === 405, String(res.statusCode));
    }
    const after = seriesOf((await t.app.inject({ url: '/metrics' })).body);
    const added = [...after].filter((s) => !before.has(s));
    assert.deepEqual(added, []);
    await unchanged();
  });
});

describe('hostile input on a real socket', () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    t = await makeApp();
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.app.server.address() as net.AddressInfo).port;
  });
  after(() => t.close());

  async function raw(request: string): Promise<string> {
    const s = net.connect(port, '127.0.0.1');
    await once(s, 'connect');
    s.end(request);
    const chunks: Buffer[] = [];
    for await (const c of s) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('latin1');
  }

  it('oversized header blocks are refused (431); hundreds of small headers are not a problem', async () => {
    const big = await raw(
      `GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    assert.match(big, /^HTTP\/1\.1 431 /);
    const [head, body] = big.split('\r\n\r\n') as [string, string];
    const envelope = JSON.parse(body) as {
      status: string;
      error: { code: string };
      meta: { request_id: string };
    };
    assert.equal(envelope.status, 'error');
    assert.equal(envelope.error.code, 'REQUEST_HEADERS_TOO_LARGE');
    assert.match(head, new RegExp(`^x-request-id: ${envelope.meta.request_id}$`, 'im'));
    assert.match(head, /^x-content-type-options: nosniff$/im);
    assert.ok(!body.includes('aaaa'), 'the refused header is not echoed');
    const many = Array.from({ length: 500 }, (_, i) => `X-H${i}: v`).join('\r\n');
    const ok = await raw(
      `GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${many}\r\n\r\n`,
    );
    assert.match(ok, /^HTTP\/1\.1 200 /);
  });

  it('malformed requests get a 400 and the server keeps serving', async () => {
    for (const bad of [
      'GARBAGE\r\n\r\n',
      'GET / HTTP/9.9\r\n\r\n',
      'GET /\0 HTTP/1.1\r\nHost: x\r\n\r\n',
      'POST /api/v1/proxies HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n',
    ]) {
      const answer = await raw(bad);
      assert.match(answer, /^HTTP\/1\.1 400 /, JSON.stringify(bad));
      const envelope = JSON.parse(answer.split('\r\n\r\n')[1] ?? '') as { error: { code: string } };
      assert.equal(envelope.error.code, 'BAD_REQUEST', JSON.stringify(bad));
    }
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/health`);
    assert.equal(res.status, 200);
  });
});
