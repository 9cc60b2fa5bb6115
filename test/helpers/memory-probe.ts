/*
 * Run by test/memory.test.ts as `node --expose-gc test/helpers/memory-probe.ts`: measures, in a process
 * of its own, the heap used after a full GC (a) per proxy, for 10,000 proxies added to the pool, (b) per
 * proxy, for 10,000 proxies with credentials loaded from a SQLite file at start-up (the pool-scale case),
 * and (c) across 20,000 proxied calls through a fixture proxy once warm. Prints one JSON line.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config.ts';
import { bufferedWork } from '../../src/outbound/works.ts';
import { createServices } from '../../src/services.ts';
import { SqliteStore } from '../../src/store/sqlite.ts';
import { rec } from './store.ts';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

function heapAfterGc(): number {
  for (let i = 0; i < 3; i++) gc?.();
  return process.memoryUsage().heapUsed;
}

const silent = pino({ level: 'silent' });
const dir = mkdtempSync(join(tmpdir(), 'rota-memory-'));

/** Heap used after GC with services started over `path` (alive while measured, then closed). */
async function heapWithStore(path: string): Promise<number> {
  const env = {
    ROTA_PROXY_PORT: '0',
    ROTA_SOCKS_PORT: '0',
    ROTA_STORAGE_PATH: path,
    ROTA_LOG_LEVEL: 'silent',
  };
  const s = await createServices(loadConfig(env), silent, { processMetrics: false });
  const h = heapAfterGc();
  await s.close();
  return h;
}

async function loadedPerProxy(n: number): Promise<number> {
  const full = join(dir, 'full.db');
  const store = new SqliteStore({ path: full, secretKey: null, logger: silent });
  await store.open();
  const records = Array.from({ length: n }, (_, i) =>
    rec({
      host: `10.1.${(i >> 8) & 255}.${i & 255}`,
      port: 3128,
      username: `user${i}`,
      password: `pw-${i}-x`,
    }),
  );
  await store.insertMany(records);
  await store.close();
  const empty = await heapWithStore(join(dir, 'empty.db'));
  const loaded = await heapWithStore(full);
  return (loaded - empty) / n;
}

const loadedBytes = await loadedPerProxy(10_000);
rmSync(dir, { recursive: true, force: true });

const config = loadConfig({
  ROTA_PROXY_PORT: '0',
  ROTA_SOCKS_PORT: '0',
  ROTA_SSRF_ALLOW: '127.0.0.0/8',
  ROTA_LOG_LEVEL: 'silent',
});
const services = await createServices(config, silent, { processMetrics: false });

const before = heapAfterGc();
const N = 10_000;
for (let i = 0; i < N; i++) {
  await services.pool.add({ url: `http://10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:3128` });
}
const perProxy = (heapAfterGc() - before) / N;
for (const e of [...services.pool.all()]) await services.pool.remove(e.record.id);

// A proxy that answers absolute-URI requests itself and keeps nothing: the test fixtures record every
// request they see, which would be measured here as Rota's own growth.
const proxy = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': 11 });
  res.end('{"ok":true}');
});
await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
await services.pool.add({ url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` });
const url = new URL('http://127.0.0.1:9/json');
const call = () =>
  services.executor.execute({
    work: bufferedWork(services.dispatchers, { url, method: 'GET', headers: {}, body: null }, 1 << 20),
    timeoutS: 10,
    host: '127.0.0.1',
  });
async function calls(n: number): Promise<void> {
  for (let i = 0; i < n; i += 50) await Promise.all(Array.from({ length: 50 }, call));
}
await calls(5_000);
const warm = heapAfterGc();
await calls(20_000);
const mid = heapAfterGc();
await calls(20_000);
const growth = heapAfterGc() - mid;
const first = mid - warm;
process.stdout.write(
  `${JSON.stringify({ perProxyBytes: Math.round(perProxy), loadedPerProxyBytes: Math.round(loadedBytes), firstBytes: first, growthBytes: growth })}\n`,
);
await services.close();
proxy.close();
process.exit(0);
