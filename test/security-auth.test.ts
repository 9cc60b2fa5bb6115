import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { LightMyRequestResponse } from 'fastify';
import { json, makeApp, type TestApp } from './helpers/app.ts';
import { API_KEY, AUTH_ENV, assertNoSecret, listRoutes } from './helpers/security.ts';
import { startServer } from './helpers/server.ts';

const PUBLIC = new Set([
  '/docs',
  '/docs/static/:file',
  '/docs/json',
  '/docs/yaml',
  '/docs/static/index.html',
  '/docs/static/swagger-initializer.js',
  '/openapi.json',
  '/redoc',
  '/redoc/redoc.standalone.js',
  '/favicon.ico',
  '/dashboard',
  '/dashboard/dashboard.js',
  '/dashboard/dashboard.css',
  '/api/v1/health',
  '/api/v1/ready',
]);
const METRICS = new Set(['/metrics', '/metrics/retry', '/metrics/circuit-breaker']);
const SOME_ID = '00000000-0000-4000-8000-000000000000';

function concrete(path: string): string {
  // The docs wildcard is the static asset folder of the Swagger UI.
  if (path === '/docs/static/:file') return '/docs/static/swagger-ui.css';
  return path.replace(/:proxy_id/g, SOME_ID);
}

/** The parts of a 401 that may differ between two requests: ids, clocks, remaining quota. */
function shape(res: LightMyRequestResponse) {
  const {
    'x-request-id': _id,
    date: _d,
    'ratelimit-remaining': _r,
    'ratelimit-reset': _z,
    ...h
  } = res.headers;
  const b = res.json();
  b.meta.request_id = b.meta.timestamp = b.error.timestamp = 'x';
  return { status: res.statusCode, headers: h, body: b };
}

describe('auth: which routes need the key', () => {
  for (const publicMetrics of [false, true]) {
    it(`every route but the public ones answers 401 without a key (public metrics ${publicMetrics})`, async () => {
      const t = await makeApp({ ...AUTH_ENV, ROTA_PUBLIC_METRICS: String(publicMetrics) });
      try {
        const routes = listRoutes(t.app).filter((r) => r.path !== '*');
        assert.ok(routes.length > 25, 'the router lists every route');
        for (const { path, methods } of routes) {
          for (const method of methods) {
            const body = method === 'GET' || method === 'DELETE' ? {} : json({});
            const res = await t.app.inject({ method: method as 'GET', url: concrete(path), ...body });
            const open = PUBLIC.has(path) || (publicMetrics && METRICS.has(path));
            if (open) assert.notEqual(res.statusCode, 401, `${method} ${path} is public`);
            else {
              assert.equal(res.statusCode, 401, `${method} ${path} needs the key`);
              assert.equal(res.headers['www-authenticate'], 'ApiKey');
            }
          }
        }
        for (const alias of ['/api/health', '/api/ready', '/api/v1/health/']) {
          assert.notEqual((await t.app.inject({ url: alias })).statusCode, 401, alias);
        }
        for (const hidden of [
          '/api/stats',
          '/api/v1/%63onfig',
          '/api/v1//config',
          '/docs/../api/v1/config',
        ]) {
          assert.equal((await t.app.inject({ url: hidden })).statusCode, 401, hidden);
        }
      } finally {
        await t.close();
      }
    });
  }
});

describe('auth: the key', () => {
  let t: TestApp;
  before(async () => {
    t = await makeApp(AUTH_ENV);
  });
  after(() => t.close());

  const get = (headers: Record<string, string> = {}) => t.app.inject({ url: '/api/v1/config', headers });

  it('is accepted in X-API-Key and as Authorization: Bearer (any case, any spacing)', async () => {
    const accepted: Record<string, string>[] = [
      { 'x-api-key': API_KEY },
      { authorization: `Bearer ${API_KEY}` },
      { authorization: `bearer    ${API_KEY}  ` },
      { authorization: `BEARER\t${API_KEY}` },
    ];
    for (const headers of accepted) {
      assert.equal((await get(headers)).statusCode, 200, JSON.stringify(Object.keys(headers)));
    }
  });

  it('a missing key and every kind of wrong key get the very same 401', async () => {
    const missing = shape(await get());
    assert.equal(missing.status, 401);
    assert.equal(missing.body.error.code, 'UNAUTHORIZED');
    const wrong: Record<string, string>[] = [
      { 'x-api-key': 'nope' },
      { 'x-api-key': API_KEY.slice(0, -1) },
      { 'x-api-key': `${API_KEY}x` },
      { 'x-api-key': API_KEY.toUpperCase() },
      { 'x-api-key': 'ключ-🔑-clé' },
      { 'x-api-key': 'k'.repeat(12_000) },
      { 'x-api-key': `${API_KEY}, ${API_KEY}` },
      { authorization: `Basic ${Buffer.from(`u:${API_KEY}`).toString('base64')}` },
      { authorization: API_KEY },
      { authorization: 'Bearer' },
      { authorization: 'Bearer ' },
      { authorization: `Token ${API_KEY}` },
    ];
    for (const headers of wrong)
      assert.deepEqual(shape(await get(headers)), missing, JSON.stringify(headers).slice(0, 80));
  });

  it('each refusal is one audit line with request id, client IP, route and outcome; no key in any log', async () => {
    const from = t.logs.length;
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/proxies',
      remoteAddress: '198.51.100.23',
      headers: { 'x-api-key': `${API_KEY}-almost`, 'content-type': 'application/json' },
      payload: JSON.stringify({ url: 'http://1.2.3.4:80' }),
    });
    assert.equal(res.statusCode, 401);
    const audit = t.logs.slice(from).filter((l) => l.includes('"audit":true'));
    assert.equal(audit.length, 1, audit.join('\n'));
    const line = JSON.parse(audit[0]!);
    assert.equal(line.action, 'auth.failed');
    assert.equal(line.request_id, res.headers['x-request-id']);
    assert.equal(line.client_ip, '198.51.100.23');
    assert.equal(line.route, '/api/v1/proxies');
    assert.equal(line.outcome, 'denied');
    assert.equal(t.services.pool.size, 0, 'nothing was added');
    assertNoSecret(t.logs.join('\n'), 'logs', [API_KEY]);
  });

  it('a CORS preflight passes without the key; the refusal carries the security headers', async () => {
    const pre = await t.app.inject({ method: 'OPTIONS', url: '/api/v1/config' });
    assert.notEqual(pre.statusCode, 401);
    const res = await get();
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.json().meta.request_id, res.headers['x-request-id']);
  });
});

describe('auth: non-ASCII keys on the wire', () => {
  it('a UTF-8 key matches the same UTF-8 bytes sent over a real socket, and nothing else', async () => {
    const key = 'clé-ключ-🔑-9';
    const t = await makeApp({ ...AUTH_ENV, ROTA_API_KEY: key });
    try {
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = t.app.server.address() as net.AddressInfo;
      const status = async (value: Buffer) => {
        const s = net.connect(port, '127.0.0.1');
        await once(s, 'connect');
        const head = Buffer.from(
          'GET /api/v1/config HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nX-API-Key: ',
        );
        s.end(Buffer.concat([head, value, Buffer.from('\r\n\r\n')]));
        const chunks: Buffer[] = [];
        for await (const c of s) chunks.push(c as Buffer);
        return Number(/^HTTP\/1\.1 (\d+)/.exec(Buffer.concat(chunks).toString('latin1'))?.[1]);
      };
      assert.equal(await status(Buffer.from(key, 'utf8')), 200);
      const near = Buffer.from(key, 'utf8');
      near[3] = 0xaa; // é (C3 A9) becomes ê (C3 AA): valid UTF-8, another key
      assert.equal(await status(near), 401);
      assert.equal(await status(Buffer.from(`${key}x`, 'utf8')), 401);
    } finally {
      await t.close();
    }
  });
});

const ROOT = fileURLToPath(new URL('..', import.meta.url));

async function runMain(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ROTA_')));
  const p = spawn(process.execPath, ['src/main.ts'], {
    cwd: ROOT,
    env: { ...base, ROTA_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  p.stdout.on('data', (c: Buffer) => (out += c));
  p.stderr.on('data', (c: Buffer) => (out += c));
  const [code] = (await once(p, 'exit')) as [number | null];
  return { code, out };
}

describe('auth: start-up', () => {
  it('refuses to start with auth on and no key (exit 2, names the variable)', async () => {
    const envs: Record<string, string>[] = [
      { ROTA_REQUIRE_AUTH: 'true' },
      { ROTA_REQUIRE_AUTH: 'true', ROTA_API_KEY: '   ' },
    ];
    for (const env of envs) {
      const { code, out } = await runMain(env);
      assert.equal(code, 2, out);
      assert.match(out, /CONFIGURATION_ERROR ROTA_API_KEY/);
    }
  });

  it('warns that it is an open relay when auth is off on a non-loopback address, only then', async () => {
    const cases: [Record<string, string>, boolean][] = [
      [{ ROTA_HOST: '0.0.0.0' }, true],
      [{ ROTA_HOST: '127.0.0.1' }, false],
      [{ ROTA_HOST: '0.0.0.0', ...AUTH_ENV }, false],
    ];
    for (const [env, warned] of cases) {
      const s = await startServer(env);
      try {
        await new Promise((r) => setTimeout(r, 200));
        assert.equal(s.output().includes('open relay'), warned, `${JSON.stringify(env)}: ${s.output()}`);
        assertNoSecret(s.output(), 'start-up output', [API_KEY]);
      } finally {
        await s.stop();
      }
    }
  });
});
