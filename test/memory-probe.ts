/*
 * Run by test/memory.test.ts as `node --expose-gc test/memory-probe.ts`: measures, in a process of its
 * own, the heap used after a full GC (a) per proxy, for 10,000 proxies in the pool, and (b) across
 * 20,000 proxied calls through a fixture proxy once warm. Prints one JSON line.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { bufferedWork } from '../src/outbound/works.ts';
import { createServices } from '../src/services.ts';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

function heapAfterGc(): number {
  for (let i = 0; i < 3; i++) gc?.();
  return process.memoryUsage().heapUsed;
}

const config = loadConfig({
  ROTA_PROXY_PORT: '0',
  ROTA_SOCKS_PORT: '0',
  ROTA_SSRF_ALLOW: '127.0.0.0/8',
  ROTA_LOG_LEVEL: 'silent',
});
const services = await createServices(config, pino({ level: 'silent' }), { processMetrics: false });

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
  `${JSON.stringify({ perProxyBytes: Math.round(perProxy), firstBytes: first, growthBytes: growth })}\n`,
);
await services.close();
proxy.close();
process.exit(0);
