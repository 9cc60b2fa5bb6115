import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/*
 * Memory regression: the heap a proxy costs, and that traffic leaves nothing behind. Measured in a
 * process of its own (test/helpers/memory-probe.ts, with --expose-gc) as heap used after a full GC,
 * which is what the code holds; RSS would measure the allocator and the young generation instead.
 *
 * Bounds, with margin over what was measured when they were set (2026-11-25: 1,128 bytes per proxy
 * added through the pool, 679 per proxy with credentials loaded from SQLite at start-up; -30 KB to
 * +0.3 MB across 20,000 calls once warm):
 */
const PER_PROXY_BYTES = 1_536;
const LOADED_PER_PROXY_BYTES = 1_024;
const GROWTH_BYTES = 3 * 1024 * 1024;

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

test('10,000 proxies cost under 1.5 KiB of heap each (1 KiB loaded from SQLite); 20,000 calls do not grow the heap', async () => {
  const { stdout } = await run(process.execPath, ['--expose-gc', 'test/helpers/memory-probe.ts'], {
    cwd: ROOT,
    timeout: 240_000,
  });
  const m = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as {
    perProxyBytes: number;
    loadedPerProxyBytes: number;
    firstBytes: number;
    growthBytes: number;
  };
  assert.ok(m.perProxyBytes > 0 && m.perProxyBytes < PER_PROXY_BYTES, `per proxy: ${m.perProxyBytes} bytes`);
  assert.ok(
    m.loadedPerProxyBytes > 0 && m.loadedPerProxyBytes < LOADED_PER_PROXY_BYTES,
    `per proxy loaded from SQLite: ${m.loadedPerProxyBytes} bytes`,
  );
  assert.ok(m.growthBytes < GROWTH_BYTES, `after 20,000 more calls the heap grew by ${m.growthBytes} bytes`);
});
