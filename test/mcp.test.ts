/**
 * Rota's MCP server through the SDK's own client, over both transports: Streamable HTTP at /mcp on the
 * API port (in-process services) and `rota mcp` on stdio (a real process, over the REST API). The same
 * suite runs on each: every tool and both resources, a fetch through a fixture proxy, a body over the
 * cap, binary content, an SSRF target refused, validation errors with Rota's codes. Then auth on and off
 * (the key, write tools without it), the shared rate limit, ROTA_MCP=false and the methods /mcp refuses.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { json, type TestApp } from './helpers/app.ts';
import { engineApp } from './helpers/engine.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const KEY = 'mcp-test-key-0123456789abcdef';

let target: TargetServer;
let proxy: ForwardProxy;

before(async () => {
  [target, proxy] = await Promise.all([startTarget(), startForwardProxy()]);
});
after(async () => {
  await Promise.all([target.close(), proxy.close()]);
});

/** An app over real services, listening on a loopback port (the SDK's clients speak real HTTP). */
async function listening(env: Record<string, string>): Promise<{ t: TestApp; base: string }> {
  const t = await engineApp({ ROTA_HEALTH_CHECK_URL: target.url('/json').href, ...env });
  const base = await t.app.listen({ host: '127.0.0.1', port: 0 });
  return { t, base };
}

async function httpClient(base: string, key?: string): Promise<Client> {
  const client = new Client({ name: 'rota-test', version: '1.0.0' });
  const headers: Record<string, string> = key === undefined ? {} : { 'x-api-key': key };
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } }),
  );
  return client;
}

async function stdioClient(base: string, key?: string): Promise<Client> {
  const client = new Client({ name: 'rota-test', version: '1.0.0' });
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', ROTA_URL: base };
  if (key !== undefined) env.ROTA_API_KEY = key;
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['bin/rota', 'mcp'],
    cwd: ROOT,
    env,
    stderr: 'pipe',
  });
  await client.connect(transport);
  return client;
}

type Structured = Record<string, unknown> & { error?: { code: string; message: string; details: unknown } };

async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  return { isError: r.isError === true, data: (r.structuredContent ?? {}) as Structured, content: r.content };
}

async function ok(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Structured> {
  const r = await call(client, name, args);
  assert.equal(r.isError, false, `${name}: ${JSON.stringify(r.data)}`);
  return r.data;
}

async function refused(client: Client, name: string, args: Record<string, unknown>, code: string) {
  const r = await call(client, name, args);
  assert.equal(r.isError, true, `${name} should fail: ${JSON.stringify(r.data)}`);
  const error = r.data.error;
  assert.ok(error, JSON.stringify(r.data));
  assert.equal(error.code, code, JSON.stringify(r.data));
  return error;
}

const TRANSPORTS = { http: httpClient, stdio: stdioClient } as const;

for (const [kind, connect] of Object.entries(TRANSPORTS)) {
  describe(`MCP over ${kind} (auth on, with the key)`, () => {
    let t: TestApp;
    let client: Client;
    let proxyId: string;
    before(async () => {
      const l = await listening({ ROTA_REQUIRE_AUTH: 'true', ROTA_API_KEY: KEY });
      t = l.t;
      client = await connect(l.base, KEY);
    });
    after(async () => {
      await client.close();
      await t.close();
    });

    test('lists every tool and both resources, and reads the resources', async () => {
      const tools = (await client.listTools()).tools.map((x) => x.name).sort();
      assert.deepEqual(tools, [
        'add_proxy',
        'bans',
        'check_proxies',
        'fetch',
        'list_proxies',
        'pool_status',
        'remove_proxy',
        'rotate',
      ]);
      const writes = (await client.listTools()).tools.filter((x) =>
        /Changes the pool/.test(x.description ?? ''),
      );
      assert.deepEqual(writes.map((x) => x.name).sort(), ['add_proxy', 'remove_proxy']);
      const hints = Object.fromEntries((await client.listTools()).tools.map((x) => [x.name, x.annotations]));
      assert.deepEqual(
        [hints.pool_status?.readOnlyHint, hints.add_proxy?.readOnlyHint, hints.fetch?.openWorldHint],
        [true, false, true],
      );
      const uris = (await client.listResources()).resources.map((r) => r.uri).sort();
      assert.deepEqual(uris, ['rota://config', 'rota://pool/status']);
      const config = await client.readResource({ uri: 'rota://config' });
      const first = config.contents[0] as { text: string };
      assert.equal(JSON.parse(first.text).auth_enabled, true);
    });

    test('add_proxy, list_proxies, pool_status, rotate', async () => {
      const added = await ok(client, 'add_proxy', { url: `http://127.0.0.1:${proxy.port}`, tags: ['mcp'] });
      proxyId = added.id as string;
      assert.equal(added.url, `http://127.0.0.1:${proxy.port}`);
      const page = await ok(client, 'list_proxies', { page_size: 10 });
      assert.deepEqual([page.total, page.page, (page.items as { id: string }[])[0]?.id], [1, 1, proxyId]);
      const status = await ok(client, 'pool_status');
      assert.equal((status.pool_stats as { total: number }).total, 1);
      const pool = await client.readResource({ uri: 'rota://pool/status' });
      assert.equal(JSON.parse((pool.contents[0] as { text: string }).text).pool_stats.total, 1);
      const next = await ok(client, 'rotate', { host: '127.0.0.1' });
      assert.equal(next.id, proxyId);
      // The rule a call would get, paths and methods included, as GET rotate answers.
      const rules = [
        { name: 'search', match: { hosts: ['127.0.0.1'], paths: ['/search'], methods: ['GET'] } },
      ];
      const put = await t.app.inject({
        method: 'PUT',
        url: '/api/v1/policies',
        headers: { 'content-type': 'application/json', 'x-api-key': KEY },
        payload: JSON.stringify({ rules }),
      });
      assert.equal(put.statusCode, 200, put.body);
      const under = await ok(client, 'rotate', { host: '127.0.0.1', path: '/search/x', method: 'GET' });
      assert.deepEqual([under.id, under.policy], [proxyId, 'search']);
      assert.equal((await ok(client, 'rotate', { host: '127.0.0.1', path: '/other' })).policy, null);
      await t.app.inject({
        method: 'PUT',
        url: '/api/v1/policies',
        headers: { 'content-type': 'application/json', 'x-api-key': KEY },
        payload: JSON.stringify({ rules: [] }),
      });
      await refused(client, 'add_proxy', { url: 'ftp://nope' }, 'INVALID_PROXY_FORMAT');
      await refused(client, 'add_proxy', { url: `http://127.0.0.1:${proxy.port}` }, 'PROXY_ALREADY_EXISTS');
    });

    test('fetch goes through the fixture proxy and returns status, headers, proxy and body', async () => {
      const seen = proxy.requests.length;
      const r = await call(client, 'fetch', { url: target.url('/json').href });
      assert.equal(r.isError, false, JSON.stringify(r.data));
      assert.equal(r.data.status, 200);
      assert.equal(r.data.body, '{"ok":true}');
      assert.equal(r.data.proxy_id, proxyId);
      assert.equal((r.data.headers as Record<string, string>)['content-type'], 'application/json');
      assert.equal(r.data.truncated, false);
      assert.equal(proxy.requests.length, seen + 1, 'the fixture proxy carried it');
      assert.equal(proxy.requests.at(-1)?.target, target.url('/json').href);
      assert.deepEqual(r.content.at(-1), { type: 'text', text: '{"ok":true}' });
      // The same call as POST request: its request-log record is closed, with its path and bytes.
      const log = await t.app.inject({ url: '/api/v1/requests?page_size=1', headers: { 'x-api-key': KEY } });
      const rec = (log.json() as { data: { items: Record<string, unknown>[] } }).data.items[0];
      assert.equal(rec?.path, '/json');
      assert.equal(rec?.open, false);
      assert.ok(Number(rec?.bytes_down) > 0);
    });

    test('a body over max_bytes is cut there; binary content is described, not shown', async () => {
      const sent = 'é'.repeat(3000);
      const big = await ok(client, 'fetch', {
        url: target.url('/echo').href,
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: sent,
        max_bytes: 1001,
      });
      assert.equal(big.truncated, true);
      assert.ok((big.bytes as number) > 6000);
      // Cut at 1001 bytes, or at 1000 when the 1001st would split a two-byte character (render.test.ts).
      const shown = Buffer.byteLength(big.body as string);
      assert.ok(shown === 1000 || shown === 1001, String(shown));
      assert.ok(!(big.body as string).includes('\uFFFD'), 'no character is broken');
      assert.match(big.note as string, new RegExp(`cut at ${shown} of ${big.bytes} bytes`));
      const bin = await ok(client, 'fetch', { url: target.url('/big?bytes=5000').href });
      assert.equal(bin.body, null);
      assert.equal(bin.bytes, 5000);
      assert.match(bin.note as string, /binary content \(application\/octet-stream\), 5000 bytes/);
    });

    test('an SSRF target is refused with INVALID_URL; bad arguments with the REST codes', async () => {
      const seen = proxy.requests.length;
      const e = await refused(
        client,
        'fetch',
        { url: 'http://169.254.169.254/latest/meta-data/' },
        'INVALID_URL',
      );
      assert.equal((e.details as { reason: string }).reason, 'link_local');
      await refused(client, 'fetch', { url: 'http://10.0.0.1/' }, 'INVALID_URL');
      assert.equal(proxy.requests.length, seen, 'nothing went out');
      await refused(client, 'fetch', { url: target.url('/json').href, method: 'BREW' }, 'INVALID_METHOD');
      await refused(client, 'fetch', {}, 'INVALID_URL');
      const v = await refused(client, 'list_proxies', { page: 0 }, 'VALIDATION_ERROR');
      assert.deepEqual((v.details as { loc: unknown[] }[])[0]?.loc, ['arguments', 'page']);
    });

    test('check_proxies and bans', async () => {
      const checked = await ok(client, 'check_proxies', { proxy_ids: [proxyId] });
      const results = checked.results as { proxy_id: string; status: string }[];
      assert.deepEqual(
        results.map((x) => [x.proxy_id, x.status]),
        [[proxyId, 'working']],
      );
      const none = await ok(client, 'bans', { action: 'list' });
      assert.deepEqual([none.total, none.items], [0, []]);
      const report = { action: 'report', proxy_id: proxyId, host: 'Example.COM', cooldown_s: 60 };
      const banned = await ok(client, 'bans', report);
      assert.deepEqual([banned.proxy_id, banned.host, banned.count], [proxyId, 'example.com', 1]);
      const until = Date.parse(banned.until as string) - Date.now();
      assert.ok(until > 55_000 && until <= 60_000, String(until));
      const listed = await ok(client, 'bans', { host: 'example.com' });
      assert.deepEqual(
        (listed.items as { proxy_id: string; count: number }[]).map((x) => [x.proxy_id, x.count]),
        [[proxyId, 1]],
      );
      assert.equal((await ok(client, 'bans', report)).count, 2, 'a repeat doubles, as any ban');
      await refused(client, 'bans', { action: 'report', host: 'example.com' }, 'VALIDATION_ERROR');
      const other = '00000000-0000-4000-8000-000000000000';
      await refused(client, 'bans', { ...report, proxy_id: other }, 'PROXY_NOT_FOUND');
    });

    test('remove_proxy removes it; a second time PROXY_NOT_FOUND', async () => {
      assert.deepEqual(await ok(client, 'remove_proxy', { proxy_id: proxyId }), { removed: proxyId });
      assert.equal((await ok(client, 'list_proxies')).total, 0);
      await refused(client, 'remove_proxy', { proxy_id: proxyId }, 'PROXY_NOT_FOUND');
      await refused(client, 'rotate', {}, 'PROXY_POOL_EMPTY');
    });
  });
}

describe('MCP auth', () => {
  test('auth on: /mcp without the key is 401, as every API route; stdio without it gets UNAUTHORIZED', async () => {
    const { t, base } = await listening({ ROTA_REQUIRE_AUTH: 'true', ROTA_API_KEY: KEY });
    try {
      await assert.rejects(httpClient(base), /401|Unauthorized|valid API key/i);
      await assert.rejects(httpClient(base, 'wrong-key'), /401|Unauthorized|valid API key/i);
      const stdio = await stdioClient(base);
      try {
        await refused(stdio, 'pool_status', {}, 'UNAUTHORIZED');
        await refused(stdio, 'add_proxy', { url: `http://127.0.0.1:${proxy.port}` }, 'UNAUTHORIZED');
      } finally {
        await stdio.close();
      }
      assert.equal(t.services.pool.size, 0);
    } finally {
      await t.close();
    }
  });

  test('a key configured but not required: reads are open, writes need the key', async () => {
    const { t, base } = await listening({ ROTA_API_KEY: KEY });
    const anonymous = await httpClient(base);
    const keyed = await httpClient(base, KEY);
    try {
      await ok(anonymous, 'pool_status');
      const url = `http://127.0.0.1:${proxy.port}`;
      const e = await refused(anonymous, 'add_proxy', { url }, 'UNAUTHORIZED');
      assert.match(e.message, /changes the pool/);
      const id = (await ok(keyed, 'add_proxy', { url })).id as string;
      await refused(anonymous, 'remove_proxy', { proxy_id: id }, 'UNAUTHORIZED');
      await refused(
        anonymous,
        'bans',
        { action: 'report', proxy_id: id, host: 'example.com' },
        'UNAUTHORIZED',
      );
      assert.equal(t.services.pool.size, 1);
      await ok(keyed, 'remove_proxy', { proxy_id: id });
      assert.equal(t.services.pool.size, 0);
      const audit = t.logs.filter((l) => l.includes('"audit":true') && l.includes('"route":"/mcp"'));
      assert.deepEqual(
        audit.map((l) => JSON.parse(l).action),
        ['proxy.add', 'proxy.delete'],
      );
    } finally {
      await Promise.all([anonymous.close(), keyed.close()]);
      await t.close();
    }
  });

  test('auth off: every tool works without a key, over both transports', async () => {
    const { t, base } = await listening({});
    const clients = [await httpClient(base), await stdioClient(base)];
    try {
      for (const [i, c] of clients.entries()) {
        const id = (await ok(c, 'add_proxy', { url: `http://127.0.0.1:${proxy.port}`, tags: [`c${i}`] }))
          .id as string;
        assert.equal((await ok(c, 'fetch', { url: target.url('/json').href })).proxy_id, id);
        await ok(c, 'remove_proxy', { proxy_id: id });
      }
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await t.close();
    }
  });
});

describe('MCP on the API port', () => {
  test('a fetch counts against the request limit in the same bucket as POST request', async () => {
    const { t, base } = await listening({ ROTA_RATE_LIMIT_REQUEST: '2/minute' });
    const client = await httpClient(base);
    try {
      const rest = () =>
        t.app.inject({ method: 'POST', url: '/api/v1/request', ...json({ url: target.url('/json').href }) });
      assert.equal((await rest()).statusCode, 503, 'counted (an empty pool)');
      await refused(client, 'fetch', { url: target.url('/json').href }, 'PROXY_POOL_EMPTY');
      const e = await refused(client, 'fetch', { url: target.url('/json').href }, 'RATE_LIMIT_EXCEEDED');
      assert.equal((e.details as { limit: number }).limit, 2);
      assert.equal((await rest()).statusCode, 429);
      await ok(client, 'pool_status');
    } finally {
      await client.close();
      await t.close();
    }
  });

  test('a JSON-RPC batch is refused whole: no tool of it runs (one message per POST, one count each)', async () => {
    const { t } = await listening({});
    try {
      const before = t.services.pool.size;
      const add = (i: number) => ({
        jsonrpc: '2.0',
        id: i,
        method: 'tools/call',
        params: { name: 'add_proxy', arguments: { url: `http://10.9.0.${i}:3128` } },
      });
      const res = await t.app.inject({
        method: 'POST',
        url: '/mcp',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        payload: JSON.stringify([add(1), add(2), add(3)]),
      });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().error.code, -32600);
      assert.match(res.json().error.message, /one message per POST/);
      assert.equal(t.services.pool.size, before, 'nothing of it ran');
    } finally {
      await t.close();
    }
  });

  test('GET and DELETE /mcp are 405 (stateless: every answer comes with its POST)', async () => {
    const { t } = await listening({});
    try {
      for (const method of ['GET', 'DELETE'] as const) {
        const res = await t.app.inject({ method, url: '/mcp' });
        assert.equal(res.statusCode, 405, method);
        assert.equal(res.headers.allow, 'POST');
        assert.equal(res.json().error.code, 'METHOD_NOT_ALLOWED');
      }
    } finally {
      await t.close();
    }
  });

  test('ROTA_MCP=false: no /mcp', async () => {
    const { t } = await listening({ ROTA_MCP: 'false' });
    try {
      const res = await t.app.inject({
        method: 'POST',
        url: '/mcp',
        ...json({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
      assert.equal(res.statusCode, 404);
    } finally {
      await t.close();
    }
  });
});
