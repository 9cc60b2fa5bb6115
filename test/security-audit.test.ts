import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { json, makeApp, type TestApp } from './helpers/app.ts';
import {
  API_KEY,
  AUTH_ENV,
  addProxyBody,
  assertNoSecret,
  PROXY_PASS,
  PROXY_USER,
  responseText,
  SECRETS,
} from './helpers/security.ts';

const KEY = { 'x-api-key': API_KEY };

function keyed(body: unknown) {
  return { headers: { ...KEY, 'content-type': 'application/json' }, payload: JSON.stringify(body) };
}

function auditLines(t: TestApp, from: number) {
  return t.logs
    .slice(from)
    .filter((l) => l.includes('"audit":true'))
    .map((l) => JSON.parse(l));
}

describe('audit log', () => {
  let t: TestApp;
  before(async () => {
    t = await makeApp(AUTH_ENV);
  });
  after(() => t.close());

  /** Sends one request and returns its response with the audit lines it produced. */
  async function op(method: 'POST' | 'PUT' | 'DELETE' | 'GET', url: string, body?: unknown) {
    const from = t.logs.length;
    const res = await t.app.inject({
      method,
      url,
      remoteAddress: '192.0.2.77',
      headers: { ...KEY, cookie: `session=${API_KEY}`, 'proxy-authorization': `Basic ${PROXY_PASS}` },
      ...(body === undefined
        ? {}
        : { payload: JSON.stringify(body), headers: { ...KEY, 'content-type': 'application/json' } }),
    });
    return { res, lines: auditLines(t, from) };
  }

  it('every write and admin operation is one JSON line: request id, client IP, route, outcome', async () => {
    const add = await op('POST', '/api/v1/proxies', addProxyBody());
    assert.equal(add.res.statusCode, 201, add.res.body);
    const id = add.res.json().data.id as string;
    const cases: [Awaited<ReturnType<typeof op>>, string, string, string][] = [
      [add, 'proxy.add', '/api/v1/proxies', 'success'],
      [await op('POST', '/api/v1/proxies', addProxyBody()), 'proxy.add', '/api/v1/proxies', 'failure'],
      [await op('PUT', '/api/v1/config', { timeout: 25 }), 'config.update', '/api/v1/config', 'success'],
      [
        await op('PUT', '/api/v1/retry/policy', { jitter: false }),
        'retry_policy.update',
        '/api/v1/retry/policy',
        'success',
      ],
      [
        await op('POST', `/api/v1/circuit-breakers/${id}/reset`),
        'breaker.reset',
        '/api/v1/circuit-breakers/:proxy_id/reset',
        'success',
      ],
      [
        await op('POST', '/api/v1/proxies/health-check', { proxy_ids: [id] }),
        'proxy.health_check',
        '/api/v1/proxies/health-check',
        'success',
      ],
      [await op('DELETE', `/api/v1/proxies/${id}`), 'proxy.delete', '/api/v1/proxies/:proxy_id', 'success'],
      [await op('DELETE', `/api/v1/proxies/${id}`), 'proxy.delete', '/api/v1/proxies/:proxy_id', 'failure'],
    ];
    for (const [{ res, lines }, action, route, outcome] of cases) {
      assert.equal(lines.length, 1, `${action}: ${JSON.stringify(lines)}`);
      const l = lines[0];
      assert.deepEqual(
        [l.action, l.request_id, l.client_ip, l.route, l.outcome, l.status],
        [action, res.headers['x-request-id'], '192.0.2.77', route, outcome, res.statusCode],
      );
    }
    assert.equal(cases[0]![0].lines[0].body.password, '[REDACTED]');
  });

  it('reads are not audited, and neither is POST request (its log line holds no header value)', async () => {
    for (const url of ['/api/v1/proxies', '/api/v1/config', '/api/v1/stats']) {
      assert.equal((await op('GET', url)).lines.length, 0, url);
    }
    const from = t.logs.length;
    const { lines } = await op('POST', '/api/v1/request', {
      url: `http://${PROXY_USER}:${PROXY_PASS}@203.0.113.5/`,
      headers: { Authorization: `Bearer ${API_KEY}`, Cookie: PROXY_PASS, 'Proxy-Authorization': PROXY_PASS },
    });
    assert.equal(lines.length, 0);
    assert.ok(t.logs.length > from, 'the request was logged');
    assertNoSecret(t.logs.slice(from).join('\n'), 'request log');
  });

  it('credentials are redacted wherever they hide in a body, however malformed', async () => {
    const weird = ['p@ss/wo#rd?x', 'with space', 'ключ', 'x'.repeat(3000)].map((p) => `${PROXY_PASS}${p}`);
    const bodies: unknown[] = [
      { url: `http://${PROXY_USER}:${PROXY_PASS}@1.2.3.4:8080/path` },
      { url: `${PROXY_USER}:${PROXY_PASS}@1.2.3.4:8080` },
      { url: `socks5://${PROXY_USER}:${weird[0]}@h:1/path` },
      { url: `http://${PROXY_USER}:${weird[1]}@h:1` },
      { url: `http://${PROXY_USER}:${weird[2]}@bad host:1` },
      { url: `http://${PROXY_USER}:${weird[3]}@h:1` },
      { url: 'http://h:1', username: PROXY_USER, password: 12 },
      { url: 'http://h:1', password: PROXY_PASS, extra: { token: API_KEY, nested: { api_key: API_KEY } } },
      { url: ['x'], auth: `Bearer ${API_KEY}`, note: `Authorization: Bearer ${API_KEY}` },
    ];
    for (const body of bodies) {
      const from = t.logs.length;
      const { res, lines } = await op('POST', '/api/v1/proxies', body);
      assert.ok(res.statusCode < 500, res.body.slice(0, 200));
      assert.equal(lines.length, 1);
      assertNoSecret(responseText(res), `response to ${JSON.stringify(body).slice(0, 60)}`);
      assertNoSecret(t.logs.slice(from).join('\n'), `logs of ${JSON.stringify(body).slice(0, 60)}`);
    }
  });

  it('ROTA_AUDIT_LOG=false writes no audit line', async () => {
    const quiet = await makeApp({ ROTA_AUDIT_LOG: 'false' });
    try {
      await quiet.app.inject({ method: 'POST', url: '/api/v1/proxies', ...json(addProxyBody()) });
      assert.equal(auditLines(quiet, 0).length, 0);
    } finally {
      await quiet.close();
    }
  });
});

describe('secrets: no credential in any response, log line or metric', () => {
  let t: TestApp;
  let proxy: ForwardProxy;
  let target: TargetServer;
  before(async () => {
    target = await startTarget();
    proxy = await startForwardProxy({ auth: { username: PROXY_USER, password: PROXY_PASS } });
    t = await makeApp({
      ...AUTH_ENV,
      ROTA_SSRF_ALLOW: '127.0.0.1',
      ROTA_HEALTH_CHECK_URL: target.url('/json').href,
    });
  });
  after(async () => {
    await t.close();
    await proxy.close();
    await target.close();
  });

  it('through a real authenticated proxy: every GET route, the call, the checks and the logs are clean', async () => {
    const add = await t.app.inject({
      method: 'POST',
      url: '/api/v1/proxies',
      ...keyed({ url: `http://${PROXY_USER}:${PROXY_PASS}@127.0.0.1:${proxy.port}` }),
    });
    assert.equal(add.statusCode, 201, add.body);
    const id = add.json().data.id as string;
    const call = await t.app.inject({
      method: 'POST',
      url: '/api/v1/request',
      ...keyed({ url: target.url('/json').href }),
    });
    assert.equal(call.statusCode, 200, call.body);
    assert.equal(proxy.requests.length, 1, 'the call went through the proxy with its credentials');
    const check = await t.app.inject({ method: 'POST', url: '/api/v1/proxies/health-check', ...keyed({}) });
    assert.equal(check.json().data[0].status, 'working');
    const gets = [
      '/api/v1/proxies',
      `/api/v1/proxies/${id}`,
      '/api/v1/proxies/export',
      '/api/v1/proxies/stream',
      '/api/v1/rotate',
      '/api/v1/stats',
      '/api/v1/status',
      '/api/v1/health',
      '/api/v1/config',
      '/api/v1/circuit-breakers',
      `/api/v1/circuit-breakers/${id}`,
      '/api/v1/circuit-breakers/metrics',
      '/api/v1/metrics/retries',
      '/api/v1/metrics/retries/by-proxy',
      '/metrics',
      '/metrics/retry?format=prometheus',
      '/metrics/circuit-breaker?format=prometheus',
      '/openapi.json',
    ];
    for (const url of gets) {
      const res = await t.app.inject({ url, headers: KEY });
      assert.equal(res.statusCode, 200, `${url}: ${res.body.slice(0, 200)}`);
      assertNoSecret(responseText(res), url);
    }
    for (const res of [add, call, check]) assertNoSecret(responseText(res), res.raw.req.url ?? '');
    assertNoSecret(t.logs.join('\n'), 'logs');
  });

  it('a proxy that refuses the credentials fails without naming them', async () => {
    const wrong = await makeApp({
      ...AUTH_ENV,
      ROTA_SSRF_ALLOW: '127.0.0.1',
      ROTA_HEALTH_CHECK_URL: target.url('/json').href,
    });
    try {
      const body = {
        url: `http://127.0.0.1:${proxy.port}`,
        username: PROXY_USER,
        password: `${PROXY_PASS}-wrong`,
      };
      const add = await wrong.app.inject({ method: 'POST', url: '/api/v1/proxies', ...keyed(body) });
      assert.equal(add.statusCode, 201);
      const check = await wrong.app.inject({ method: 'POST', url: '/api/v1/proxies/test', ...keyed({}) });
      assert.equal(check.json().data[0].status, 'failed', check.body);
      const call = await wrong.app.inject({
        method: 'POST',
        url: '/api/v1/request',
        ...keyed({ url: target.url('/json').href }),
      });
      assert.ok(call.statusCode >= 500, call.body);
      for (const res of [add, check, call]) assertNoSecret(responseText(res), 'refused proxy');
      assertNoSecret(wrong.logs.join('\n'), 'logs');
    } finally {
      await wrong.close();
    }
  });
});

describe('secrets at rest', () => {
  it('the SQLite files hold the credentials only encrypted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rota-sec-'));
    try {
      const t = await makeApp({ ROTA_STORAGE_PATH: join(dir, 'rota.db') });
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/proxies', ...json(addProxyBody()) });
      assert.equal(res.statusCode, 201);
      const inline = { url: `socks5://${PROXY_USER}x:${PROXY_PASS}y@1.2.3.4:1080` };
      assert.equal(
        (await t.app.inject({ method: 'POST', url: '/api/v1/proxies', ...json(inline) })).statusCode,
        201,
      );
      await t.close();
      const files = readdirSync(dir);
      assert.ok(
        files.some((f) => f.startsWith('rota.db')),
        files.join(' '),
      );
      for (const f of files) {
        // latin1 maps each byte to one character: an ASCII secret stored in clear shows up as itself.
        assertNoSecret(readFileSync(join(dir, f)).toString('latin1'), f, SECRETS);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
