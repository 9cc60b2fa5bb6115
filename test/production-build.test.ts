import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { connectVia, getOverTunnel, socks5, viaProxy } from './helpers/forward.ts';
import { freePort, startServer } from './helpers/server.ts';

/*
 * What `npm start` runs: the production build (dist/main.js, made by scripts/build.ts), not the sources
 * the other end-to-end tests start. The bundle re-executes itself with its Node flags, turns on the
 * compile cache, and must then serve the API, the docs and the listeners as the sources do.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
let target: TargetServer;
let upstream: ForwardProxy;
let dir: string;

before(async () => {
  // scripts/test.sh builds before the tests; run alone, this file builds what is stale itself.
  const built = spawnSync(process.execPath, ['scripts/build.ts'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(built.status, 0, built.stderr);
  dir = mkdtempSync(join(tmpdir(), 'rota-prod-'));
  [target, upstream] = await Promise.all([startTarget(), startForwardProxy()]);
});

after(async () => {
  await Promise.all([target.close(), upstream.close()]);
  rmSync(dir, { recursive: true, force: true });
});

/** The fixture proxy as the pool's one member. */
async function addUpstream(server: { readonly url: string }): Promise<void> {
  const add = await fetch(`${server.url}/api/v1/proxies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url: `http://127.0.0.1:${upstream.port}` }),
  });
  assert.equal(add.status, 201, await add.text());
}

/** Files under a folder, at any depth. */
function filesUnder(path: string): number {
  return readdirSync(path, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
}

test('dist/main.js: API, request, docs and the HTTP listener; compile cache written; SIGTERM exits 0', async () => {
  const cache = join(dir, 'cache');
  const proxyPort = await freePort();
  const env = {
    ROTA_SSRF_ALLOW: '127.0.0.0/8',
    ROTA_COMPILE_CACHE: cache,
    ROTA_PROXY_PORT: String(proxyPort),
  };
  const server = await startServer(env, { script: 'dist/main.js' });
  try {
    await addUpstream(server);
    const call = await fetch(`${server.url}/api/v1/request`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: target.url('/json').href }),
    });
    const data = ((await call.json()) as { data: { status_code: number } }).data;
    assert.equal(data.status_code, 200);
    for (const page of ['/docs/', '/redoc', '/redoc/redoc.standalone.js', '/openapi.json', '/metrics']) {
      const res = await fetch(`${server.url}${page}`);
      await res.arrayBuffer();
      assert.equal(res.status, 200, page);
    }
    const relayed = await viaProxy(proxyPort, target.url('/json').href);
    assert.equal(relayed.status, 200);
    assert.ok(relayed.headers['x-rota-proxy-id'], 'the listener names the proxy');
    // Flushed after ready (runtime/compile-cache.ts), not only at exit: present while the process runs.
    assert.ok(filesUnder(cache) > 0, 'the compile cache holds entries');
  } finally {
    const exit = await server.stop('SIGTERM');
    assert.equal(exit.code, 0, server.output());
  }
  assert.doesNotMatch(server.output(), /COMPILE_CACHE_SKIPPED|NODE_FLAGS_MISSING/);
  // A second start reads the cache it left and is ready as before.
  const again = await startServer(env, { script: 'dist/main.js' });
  const exit = await again.stop('SIGTERM');
  assert.equal(exit.code, 0, again.output());
});

test('a started Rota has not loaded what it never uses (node:http2: the build hands fastify a lazy one)', async () => {
  const list = join(dir, 'builtins.txt');
  const hook = join(dir, 'builtins.cjs');
  writeFileSync(
    hook,
    `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(list)}, process.moduleLoadList.join('\\n')));\n`,
  );
  const server = await startServer({ NODE_OPTIONS: `--require ${hook}` }, { script: 'dist/main.js' });
  const docs = await fetch(`${server.url}/docs/json`);
  assert.equal(docs.status, 200);
  const exit = await server.stop('SIGTERM');
  assert.equal(exit.code, 0, server.output());
  const loaded = readFileSync(list, 'utf8').split('\n');
  assert.ok(loaded.includes('NativeModule http'), 'the list is of this process');
  assert.ok(!loaded.includes('NativeModule http2'), 'node:http2 is not loaded');
});

test('dist/main.js with SQLite: a CONNECT tunnel, SOCKS5, a Swagger UI file, a restart that keeps the pool', async () => {
  // The bundle carries Fastify, pino, prom-client, socks and ipaddr.js; the SQLite store is a chunk of its
  // own over better-sqlite3, and undici loads from node_modules on first use: each door and store once
  // through the build.
  const [proxyPort, socksPort] = [await freePort(), await freePort()];
  const env = {
    ROTA_SSRF_ALLOW: '127.0.0.0/8',
    ROTA_STORAGE_PATH: join(dir, 'rota.db'),
    ROTA_PROXY_PORT: String(proxyPort),
    ROTA_SOCKS_PORT: String(socksPort),
  };
  const host = new URL(target.url('/json').href).host;
  const server = await startServer(env, { script: 'dist/main.js' });
  try {
    await addUpstream(server);
    const tunnel = await connectVia(proxyPort, host);
    assert.equal(tunnel.status, 200, tunnel.head);
    assert.match(await getOverTunnel(tunnel.socket, host, '/json'), /^HTTP\/1\.1 200/);
    const port = Number(host.split(':')[1]);
    const viaSocks = await socks5(socksPort, { host: '127.0.0.1', port });
    assert.equal(viaSocks.reply, 0, 'SOCKS5 CONNECT granted');
    assert.match(await getOverTunnel(viaSocks.socket, host, '/json'), /^HTTP\/1\.1 200/);
    const css = await fetch(`${server.url}/docs/static/swagger-ui.css`);
    assert.equal(css.status, 200);
    assert.ok((await css.text()).length > 1000, 'the copied Swagger UI file is served');
  } finally {
    const exit = await server.stop('SIGTERM');
    assert.equal(exit.code, 0, server.output());
  }
  const again = await startServer(env, { script: 'dist/main.js' });
  try {
    const list = (await (await fetch(`${again.url}/api/v1/proxies`)).json()) as {
      data: { items: unknown[] };
    };
    assert.equal(list.data.items.length, 1, 'the proxy was kept in SQLite');
  } finally {
    const exit = await again.stop('SIGTERM');
    assert.equal(exit.code, 0, again.output());
  }
});

test('a newer scripts/build.ts makes dist/ stale: the next build rebuilds, the one after finds it up to date', () => {
  const build = () => spawnSync(process.execPath, ['scripts/build.ts'], { cwd: ROOT, encoding: 'utf8' });
  const newestSource = readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => statSync(join(e.parentPath, e.name)).mtimeMs)
    .concat(statSync(join(ROOT, 'package.json')).mtimeMs)
    .reduce((a, b) => Math.max(a, b), 0);
  // dist/ newer than every source, the script newer still: only the script can make it stale.
  const at = (ms: number) => new Date(ms);
  utimesSync(join(ROOT, 'dist', 'main.js'), at(newestSource + 1_000), at(newestSource + 1_000));
  const script = join(ROOT, 'scripts', 'build.ts');
  utimesSync(script, at(newestSource + 2_000), at(newestSource + 2_000));
  const rebuilt = build();
  assert.equal(rebuilt.status, 0, rebuilt.stderr);
  assert.match(rebuilt.stderr, /build: dist\/main\.js/, 'rebuilt');
  const again = build();
  assert.equal(again.status, 0, again.stderr);
  assert.doesNotMatch(again.stderr, /build: dist\/main\.js/, 'up to date');
});

test('a compile-cache folder other users can write is not used: one line, and Rota starts anyway', async () => {
  const open = join(dir, 'open');
  mkdirSync(open);
  chmodSync(open, 0o777);
  const server = await startServer({ ROTA_COMPILE_CACHE: open }, { script: 'dist/main.js' });
  const exit = await server.stop('SIGTERM');
  assert.equal(exit.code, 0, server.output());
  assert.match(server.output(), /COMPILE_CACHE_SKIPPED .*open: writable by other users/);
  assert.equal(filesUnder(open), 0, 'nothing was written to it');
});
