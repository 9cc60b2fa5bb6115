import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { json, makeApp, type TestApp } from './helpers/app.ts';
import {
  API,
  type Document,
  enc,
  operations,
  responseChecker,
  SOME_UUID,
  UNVERSIONED,
} from './helpers/openapi-doc.ts';
import { type RealProxy, startTinyproxy } from './helpers/real-proxies.ts';

interface Injected {
  method: 'GET';
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

/** A request for any operation of the document, path parameters filled with an unknown id. */
function requestFor(method: string, path: string): Injected {
  const url = path.replace(/\{[^}]+\}/g, SOME_UUID);
  const body = method === 'post' || method === 'put' ? json({}) : { headers: {} };
  // Upper-case methods are what inject() takes; the literal type only satisfies its signature.
  return { method: method.toUpperCase() as 'GET', url, ...body };
}

describe('API key on every documented operation (ROTA_REQUIRE_AUTH=true)', () => {
  const KEY = 'openapi-test-key-0123456789abcdef';
  let t: TestApp;
  let publicMetrics: TestApp;
  let doc: Document;
  let check: ReturnType<typeof responseChecker>;

  before(async () => {
    [t, publicMetrics] = await Promise.all([
      makeApp({ ROTA_REQUIRE_AUTH: 'true', ROTA_API_KEY: KEY }),
      makeApp({ ROTA_REQUIRE_AUTH: 'true', ROTA_API_KEY: KEY, ROTA_PUBLIC_METRICS: 'true' }),
    ]);
    const res = await t.app.inject({ url: '/openapi.json' });
    assert.equal(res.statusCode, 200, 'the document needs no key');
    doc = res.json();
    check = responseChecker(doc);
  });
  after(async () => Promise.all([t?.close(), publicMetrics?.close()]));

  it('answers 401 without a key, or with a wrong one, exactly where the document requires the key', async () => {
    for (const { key, path, method, op } of operations(doc)) {
      const req = requestFor(method, path);
      if (op.security?.length === 0) {
        const res = await t.app.inject(req);
        assert.notEqual(res.statusCode, 401, `${key} is public`);
        continue;
      }
      for (const headers of [{}, { 'x-api-key': 'wrong' }, { authorization: 'Bearer wrong' }]) {
        const res = await t.app.inject({ ...req, headers: { ...req.headers, ...headers } });
        assert.equal(res.statusCode, 401, `${key} with ${JSON.stringify(headers)}`);
        assert.equal(res.headers['www-authenticate'], 'ApiKey', key);
        assert.equal(res.json().error.code, 'UNAUTHORIZED', key);
        const pointer = `#/paths/${enc(path)}/${method}/responses/401/content/application~1json/schema`;
        assert.equal(check(pointer, res.json()), null, `${key} 401 body matches its schema`);
      }
      for (const headers of [{ 'x-api-key': KEY }, { authorization: `Bearer ${KEY}` }]) {
        const res = await t.app.inject({ ...req, headers: { ...req.headers, ...headers } });
        assert.notEqual(res.statusCode, 401, `${key} accepts the key`);
        assert.ok(
          op.responses[String(res.statusCode)],
          `${key} answered ${res.statusCode} with the key, which the document does not list`,
        );
      }
    }
  });

  it('keeps docs and probes public; metrics only with ROTA_PUBLIC_METRICS', async () => {
    const open = ['/docs', '/docs/json', '/redoc', '/redoc/redoc.standalone.js', '/openapi.json'];
    for (const url of [...open, '/api/v1/health', '/api/v1/ready', '/api/health', '/api/ready']) {
      const res = await t.app.inject({ url });
      assert.ok(res.statusCode < 400, `${url} without a key: ${res.statusCode}`);
    }
    const metrics = ['/metrics', '/api/metrics', '/api/v1/metrics', ...UNVERSIONED];
    for (const url of [...metrics, '/api/proxies', '/api/v1/docs', '/api/openapi.json']) {
      assert.equal((await t.app.inject({ url })).statusCode, 401, `${url} needs the key`);
    }
    for (const url of metrics) {
      assert.equal((await publicMetrics.app.inject({ url })).statusCode, 200, `${url} public on request`);
    }
    for (const url of ['/api/v1/stats', '/api/v1/metrics/retries', '/api/v1/circuit-breakers/metrics']) {
      assert.equal((await publicMetrics.app.inject({ url })).statusCode, 401, `${url} stays private`);
    }
  });

  it('documents the unversioned metrics as public exactly when ROTA_PUBLIC_METRICS makes them so', async () => {
    const open: Document = (await publicMetrics.app.inject({ url: '/openapi.json' })).json();
    for (const { key, path, op } of operations(open)) {
      const isPublic = op.security?.length === 0;
      const answers401 = op.responses['401'] !== undefined;
      assert.equal(isPublic, !answers401, `${key}: public exactly when it cannot answer 401`);
      if (UNVERSIONED.includes(path)) {
        assert.ok(isPublic, `${key} is public with ROTA_PUBLIC_METRICS`);
        const res = await publicMetrics.app.inject({ url: path });
        assert.equal(res.statusCode, 200, `${key} answers without a key`);
      }
    }
    const privateOps = operations(doc).filter(({ path }) => UNVERSIONED.includes(path));
    assert.ok(privateOps.length > 0, 'the unversioned metrics are documented');
    for (const { key, op } of privateOps)
      assert.notEqual(op.security?.length, 0, `${key} needs the key by default`);
  });
});

interface Sent {
  status: number;
  body: unknown;
}

describe('responses match the document (real proxy, loopback target)', () => {
  let t: TestApp;
  let doc: Document;
  let check: ReturnType<typeof responseChecker>;
  let tinyproxy: RealProxy;
  let target: Server;
  let targetUrl: string;
  const exercised = new Set<string>();

  before(async () => {
    target = createServer((_req, res) => res.end('hello from the target'));
    target.listen(0, '127.0.0.1');
    await once(target, 'listening');
    targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`;
    tinyproxy = await startTinyproxy();
    t = await makeApp({ ROTA_SSRF_ALLOW: '127.0.0.0/8', ROTA_HEALTH_CHECK_URL: targetUrl });
    doc = (await t.app.inject({ url: '/openapi.json' })).json();
    check = responseChecker(doc);
  });
  after(async () => {
    await t?.close();
    await tinyproxy?.close();
    target?.close();
  });

  /** Sends one request for the operation `key` and checks status, media type and body against it. */
  async function send(key: string, url: string, payload?: unknown, raw?: string): Promise<Sent> {
    const [method, path] = key.split(' ') as [string, string];
    const op = doc.paths[path]?.[method];
    assert.ok(op, `${key} is documented`);
    exercised.add(key);
    const body = raw !== undefined ? { headers: { 'content-type': 'application/json' }, payload: raw } : {};
    const res = await t.app.inject({
      method: method.toUpperCase() as 'GET',
      url,
      ...(payload === undefined ? body : json(payload)),
    });
    const status = String(res.statusCode);
    const documented = op.responses[status];
    assert.ok(
      documented,
      `${key} (${url}) answered ${status}, which the document does not list: ${res.body.slice(0, 300)}`,
    );
    if (status === '204') {
      assert.equal(res.body, '', key);
      return { status: 204, body: null };
    }
    const type = String(res.headers['content-type']).split(';')[0]!;
    assert.ok(documented.content?.[type], `${key} ${status}: ${type} is documented`);
    const base = `#/paths/${enc(path)}/${method}/responses/${status}/content/${enc(type)}/schema`;
    if (type === 'application/x-ndjson') {
      // Each line is a proxy as GET proxies/{id} returns it.
      const one = `#/paths/${enc(`${API}/proxies/{proxy_id}`)}/get/responses/200/content/application~1json/schema/properties/data`;
      for (const line of res.body.split('\n').filter((l) => l !== '')) {
        assert.equal(check(one, JSON.parse(line)), null, `${key} line ${line}`);
      }
      return { status: res.statusCode, body: res.body };
    }
    if (type === 'application/x-pem-file') {
      assert.match(res.body, /^-----BEGIN CERTIFICATE-----\n/, `${key}: a PEM certificate`);
      assert.doesNotMatch(res.body, /PRIVATE KEY/, `${key}: never a key`);
      return { status: res.statusCode, body: res.body };
    }
    if (type === 'text/plain') {
      assert.match(res.body, /^# (HELP|TYPE) rota_/m, `${key}: Prometheus text`);
      return { status: res.statusCode, body: res.body };
    }
    const parsed: unknown = res.json();
    assert.equal(check(base, parsed), null, `${key} ${status} body: ${res.body.slice(0, 300)}`);
    return { status: res.statusCode, body: parsed };
  }

  it('answers only documented statuses, with bodies valid against their schemas', async () => {
    assert.equal((await send(`get ${API}/rotate`, `${API}/rotate`)).status, 503, 'empty pool');
    assert.equal((await send(`post ${API}/request`, `${API}/request`, { url: targetUrl })).status, 503);
    const added = await send(`post ${API}/proxies`, `${API}/proxies`, {
      url: `http://127.0.0.1:${tinyproxy.port}`,
    });
    assert.equal(added.status, 201);
    const id = (added.body as { data: { id: string } }).data.id;
    const cases: [string, string, unknown?, string?][] = [
      [`post ${API}/proxies`, `${API}/proxies`, { url: `http://127.0.0.1:${tinyproxy.port}` }],
      [`post ${API}/proxies`, `${API}/proxies`, { url: 'ftp://nope' }],
      [`post ${API}/proxies`, `${API}/proxies`, { url: 'http://127.0.0.1:1', extra: true }],
      [`post ${API}/proxies`, `${API}/proxies`, undefined, '{"url":'],
      [`get ${API}/proxies`, `${API}/proxies?page=1&page_size=10`],
      [`get ${API}/proxies`, `${API}/proxies?status_filter=bogus`],
      [`get ${API}/proxies/export`, `${API}/proxies/export`],
      [`get ${API}/proxies/stream`, `${API}/proxies/stream?status_filter=unknown`],
      [`get ${API}/proxies/stream`, `${API}/proxies/stream?status_filter=bogus`],
      [`get ${API}/proxies/{proxy_id}`, `${API}/proxies/${id}`],
      [`get ${API}/proxies/{proxy_id}`, `${API}/proxies/${SOME_UUID}`],
      [
        `patch ${API}/proxies/{proxy_id}`,
        `${API}/proxies/${id}`,
        { weight: 2, label: 'conf', country: null },
      ],
      [`patch ${API}/proxies/{proxy_id}`, `${API}/proxies/${SOME_UUID}`, { weight: 2 }],
      [`patch ${API}/proxies/{proxy_id}`, `${API}/proxies/${id}`, { url: 'http://127.0.0.1:9' }],
      [`get ${API}/proxies/export`, `${API}/proxies/export?credentials=true`],
      [`post ${API}/proxies/health-check`, `${API}/proxies/health-check`, { proxy_ids: [id] }],
      [`post ${API}/proxies/health-check`, `${API}/proxies/health-check`, { proxy_ids: 'all' }],
      [`post ${API}/proxies/test`, `${API}/proxies/test`, {}],
      [`get ${API}/rotate`, `${API}/rotate`],
      [`get ${API}/rotate`, `${API}/rotate?country=usa`],
      [`post ${API}/request`, `${API}/request`, { url: targetUrl }],
      [`post ${API}/request`, `${API}/request`, { url: 'http://10.1.2.3/' }],
      [`post ${API}/request`, `${API}/request`, { url: 'not a url' }],
      [`post ${API}/request`, `${API}/request`, { url: targetUrl, timeout: 0, method: 'BREW' }],
      [`get ${API}/health`, `${API}/health`],
      [`get ${API}/ready`, `${API}/ready`],
      [`get ${API}/status`, `${API}/status`],
      [`get ${API}/listeners`, `${API}/listeners`],
      [`get ${API}/ban-policy`, `${API}/ban-policy`],
      [`put ${API}/ban-policy`, `${API}/ban-policy`, { cooldown_s: 600 }],
      [`put ${API}/ban-policy`, `${API}/ban-policy`, { cooldown_s: 0, body_patterns: [''] }],
      [`get ${API}/bans`, `${API}/bans?host=example.com`],
      [`get ${API}/bans`, `${API}/bans?page_size=1000`],
      [`delete ${API}/bans`, `${API}/bans?host=example.com`],
      [`post ${API}/bans`, `${API}/bans`, { proxy_id: id, host: 'example.com', cooldown_s: 30 }],
      [`post ${API}/bans`, `${API}/bans`, { proxy_id: SOME_UUID, host: 'example.com' }],
      [`post ${API}/bans`, `${API}/bans`, { proxy_id: id }],
      [`get ${API}/policies`, `${API}/policies`],
      [
        `put ${API}/policies`,
        `${API}/policies`,
        { rules: [{ name: 'conf', match: { hosts: ['*.example.com'] }, session: { scope: 'host' } }] },
      ],
      [`put ${API}/policies`, `${API}/policies`, { rules: [{ name: 'bad', match: { hosts: ['a.*.b'] } }] }],
      [`get ${API}/rotate`, `${API}/rotate?host=www.example.com&path=/x&session_id=conf-s`],
      [`get ${API}/sessions`, `${API}/sessions?page_size=5`],
      [`get ${API}/sessions`, `${API}/sessions?page_size=0`],
      [`delete ${API}/sessions/{id}`, `${API}/sessions/conf-s`],
      [`delete ${API}/sessions/{id}`, `${API}/sessions/conf-s`],
      [`put ${API}/policies`, `${API}/policies`, { rules: [] }],
      [`get ${API}/inspection`, `${API}/inspection`],
      [`put ${API}/inspection`, `${API}/inspection`, { hosts: ['*.example.com'], passthrough: ['::1'] }],
      [`put ${API}/inspection`, `${API}/inspection`, { hosts: ['a.*.example'] }],
      [`get ${API}/inspection/ca.pem`, `${API}/inspection/ca.pem`],
      [`get ${API}/stats`, `${API}/stats`],
      [`get ${API}/requests`, `${API}/requests?door=api&page_size=5`],
      [`get ${API}/requests`, `${API}/requests?format=har`],
      [`get ${API}/requests`, `${API}/requests?outcome=bogus`],
      [`get ${API}/requests/stream`, `${API}/requests/stream?door=bogus`],
      [`get ${API}/hosts`, `${API}/hosts?limit=10`],
      [`get ${API}/hosts/{host}`, `${API}/hosts/127.0.0.1`],
      [`get ${API}/hosts/{host}`, `${API}/hosts/never.example`],
      [`get ${API}/config`, `${API}/config`],
      [`put ${API}/config`, `${API}/config`, { timeout: 20 }],
      [`put ${API}/config`, `${API}/config`, { rotation_strategy: 'fastest' }],
      [`get ${API}/retry/policy`, `${API}/retry/policy`],
      [`put ${API}/retry/policy`, `${API}/retry/policy`, { max_attempts: 2, timeout: null }],
      [`put ${API}/retry/policy`, `${API}/retry/policy`, { max_attempts: 99 }],
      [`get ${API}/circuit-breakers`, `${API}/circuit-breakers`],
      [`get ${API}/circuit-breakers/metrics`, `${API}/circuit-breakers/metrics?hours=1`],
      [`get ${API}/circuit-breakers/metrics`, `${API}/circuit-breakers/metrics?hours=0`],
      [`get ${API}/circuit-breakers/{proxy_id}`, `${API}/circuit-breakers/${id}`],
      [`get ${API}/circuit-breakers/{proxy_id}`, `${API}/circuit-breakers/${SOME_UUID}`],
      [`post ${API}/circuit-breakers/{proxy_id}/reset`, `${API}/circuit-breakers/${id}/reset`],
      [`post ${API}/circuit-breakers/{proxy_id}/reset`, `${API}/circuit-breakers/${SOME_UUID}/reset`],
      [`get ${API}/metrics/retries`, `${API}/metrics/retries`],
      [`get ${API}/metrics/retries/timeseries`, `${API}/metrics/retries/timeseries`],
      [`get ${API}/metrics/retries/by-proxy`, `${API}/metrics/retries/by-proxy?hours=721`],
      [`get ${API}/metrics/retries/by-proxy`, `${API}/metrics/retries/by-proxy?hours=2`],
      ['get /metrics/retry', '/metrics/retry?format=json&hours=1'],
      ['get /metrics/retry', '/metrics/retry?format=xml'],
      ['get /metrics/circuit-breaker', '/metrics/circuit-breaker'],
      ['get /metrics/circuit-breaker', '/metrics/circuit-breaker?hours=-1'],
      [`get ${API}/dashboard/info`, `${API}/dashboard/info`],
      [`get ${API}/dashboard/live`, `${API}/dashboard/live?since=0&events_since=0`],
      [`get ${API}/dashboard/live`, `${API}/dashboard/live?since=-1`],
      [`get ${API}/dashboard/proxies`, `${API}/dashboard/proxies?sort=p50_ms&order=desc&q=127.0.0.1`],
      [`get ${API}/dashboard/proxies`, `${API}/dashboard/proxies?sort=bogus`],
      [`post ${API}/proxies/import`, `${API}/proxies/import`, [{ url: 'http://127.0.0.1:2' }, { url: 'x' }]],
      [`get ${API}/sources`, `${API}/sources`],
      [`put ${API}/sources`, `${API}/sources`, [{ name: 'list', url: targetUrl, validate: false }]],
      [`put ${API}/sources`, `${API}/sources`, [{ name: 'list', url: 'ftp://files.example/list' }]],
      [`put ${API}/sources`, `${API}/sources`, []],
      [`delete ${API}/proxies/{proxy_id}`, `${API}/proxies/${id}`],
      [`delete ${API}/proxies/{proxy_id}`, `${API}/proxies/${id}`],
    ];
    const statuses: string[] = [];
    for (const [key, url, payload, raw] of cases) {
      statuses.push(`${key} ${(await send(key, url, payload, raw)).status}`);
    }
    // The cases reach the answers they were written for, not only some documented one.
    for (const expected of [
      `post ${API}/proxies 409`,
      `post ${API}/proxies 400`,
      `post ${API}/request 200`,
      `post ${API}/request 400`,
      `post ${API}/request 422`,
      `post ${API}/proxies/health-check 200`,
      `patch ${API}/proxies/{proxy_id} 200`,
      `patch ${API}/proxies/{proxy_id} 404`,
      `patch ${API}/proxies/{proxy_id} 422`,
      `put ${API}/config 400`,
      `put ${API}/inspection 200`,
      `put ${API}/inspection 400`,
      `post ${API}/bans 201`,
      `post ${API}/bans 404`,
      `put ${API}/policies 200`,
      `put ${API}/policies 400`,
      `delete ${API}/sessions/{id} 204`,
      `delete ${API}/sessions/{id} 404`,
      `get ${API}/inspection/ca.pem 200`,
      `post ${API}/proxies/import 200`,
      `put ${API}/sources 200`,
      `put ${API}/sources 400`,
      `delete ${API}/proxies/{proxy_id} 404`,
    ]) {
      assert.ok(statuses.includes(expected), `${expected} in ${statuses.join('\n')}`);
    }
    const missing = operations(doc)
      .map((o) => o.key)
      .filter((k) => !exercised.has(k));
    assert.deepEqual(missing, [], 'every documented operation was exercised');
  });

  it('refuses a missing body exactly where the document marks it required', async () => {
    for (const { key, path, op } of operations(doc)) {
      if (!op.requestBody) continue;
      const { status } = await send(key, path.replace(/\{[^}]+\}/g, SOME_UUID));
      const refused = status >= 400 && status < 500;
      assert.equal(refused, op.requestBody.required === true, `${key} without a body: ${status}`);
    }
  });

  it('documents the 422 of a malformed JSON body on every operation that takes a body', async () => {
    for (const { key, path, op } of operations(doc)) {
      if (!op.requestBody) continue;
      const { status } = await send(key, path.replace(/\{[^}]+\}/g, SOME_UUID), undefined, '{"a":');
      assert.equal(status, 422, key);
    }
  });

  it('documents the 413 and 415 a body can get, on every operation but the GETs (which ignore it)', async () => {
    for (const { key, path, method } of operations(doc)) {
      if (method === 'get') continue;
      const url = path.replace(/\{[^}]+\}/g, SOME_UUID);
      const bodies = [
        { 'content-type': 'application/xml', payload: '<a/>' },
        { 'content-type': 'application/json', payload: JSON.stringify({ pad: 'x'.repeat(2 * 1024 * 1024) }) },
      ];
      for (const { payload, ...headers } of bodies) {
        const res = await t.app.inject({ method: method.toUpperCase() as 'GET', url, headers, payload });
        const op = doc.paths[path]?.[method];
        assert.ok(
          op?.responses[String(res.statusCode)],
          `${key} with ${headers['content-type']}: ${res.statusCode}`,
        );
      }
    }
  });

  it('answers path parameters the router refuses (bad escape, over 800 characters) as documented', async () => {
    for (const id of ['%zz', 'a'.repeat(900)]) {
      const key = `get ${API}/proxies/{proxy_id}`;
      await send(key, `${API}/proxies/${id}`);
      const res = await t.app.inject({ url: `${API}/proxies/${id}` });
      assert.ok(res.headers['x-request-id'], `${id.slice(0, 10)}: request id`);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', `${id.slice(0, 10)}: security headers`);
    }
  });

  it('documents the Prometheus text of the unversioned metrics (format=prometheus)', async () => {
    for (const path of UNVERSIONED) await send(`get ${path}`, `${path}?format=prometheus`);
  });
});

describe('rate limiting as documented', () => {
  const ONE = '1/minute';
  let generous: TestApp;
  let limited: TestApp;
  let doc: Document;

  before(async () => {
    [generous, limited] = await Promise.all([
      makeApp(),
      makeApp({
        ROTA_RATE_LIMIT: ONE,
        ROTA_RATE_LIMIT_REQUEST: ONE,
        ROTA_RATE_LIMIT_ADD_PROXY: ONE,
        ROTA_RATE_LIMIT_CONFIG: ONE,
        ROTA_RATE_LIMIT_RESET: ONE,
        ROTA_RATE_LIMIT_HEALTH_CHECK: ONE,
      }),
    ]);
    doc = (await generous.app.inject({ url: '/openapi.json' })).json();
  });
  after(async () => Promise.all([generous?.close(), limited?.close()]));

  // The metrics routes are exempt for whoever may read them, but a caller guessing keys (auth on) is
  // still counted, so their documented 429 is right although this auth-off app never sends it.
  const LIMITED_ONLY_FOR_GUESSERS = new Set([
    'get /metrics/retry',
    'get /metrics/circuit-breaker',
    'get /api/v1/dashboard/info',
    'get /api/v1/dashboard/live',
  ]);

  it('documents 429 exactly on the operations the limiter can refuse', async () => {
    const wrong: string[] = [];
    for (const { key, path, method, op } of operations(doc)) {
      if (LIMITED_ONLY_FOR_GUESSERS.has(key)) {
        assert.ok(op.responses['429'], `${key} documents 429`);
        continue;
      }
      const req = requestFor(method, path);
      await limited.app.inject(req);
      const second = await limited.app.inject(req);
      const refused = second.statusCode === 429;
      if (refused) assert.ok(second.headers['retry-after'], `${key} 429 has Retry-After`);
      if (refused !== (op.responses['429'] !== undefined)) {
        wrong.push(`${key}: answered ${second.statusCode}, 429 documented: ${!refused}`);
      }
    }
    assert.deepEqual(wrong, []);
  });
});
