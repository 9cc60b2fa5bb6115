import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../http/errors.ts';
import { MemoryStore } from '../store/memory.ts';
import { Pool } from './pool.ts';

async function pool(): Promise<Pool> {
  const store = new MemoryStore();
  await store.open();
  return new Pool(store, () => Date.now());
}

const list = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ url: `http://10.1.${i >> 8}.${i & 255}:3128` }));

test('addMany gives the event loop turns on a long list and adds every member once', async () => {
  const p = await pool();
  let turns = 0;
  const ticker = setInterval(() => turns++, 0);
  try {
    const out = await p.addMany(list(5000));
    assert.equal(out.filter((o) => o.kind === 'created').length, 5000);
  } finally {
    clearInterval(ticker);
  }
  assert.equal(p.size, 5000);
  assert.ok(turns > 2, `the event loop turned ${turns} times`);
});

test('an identity a running addMany has checked is a duplicate for an add made meanwhile', async () => {
  const p = await pool();
  const inputs = list(3000);
  const bulk = p.addMany(inputs);
  // Past the first slice: the first inputs are reserved, not yet in the pool.
  await new Promise((r) => setImmediate(r));
  await assert.rejects(
    p.add(inputs[5]!),
    (e: unknown) => e instanceof ApiError && e.code === 'PROXY_ALREADY_EXISTS',
  );
  const out = await bulk;
  assert.equal(out[5]?.kind, 'created');
  assert.equal(p.size, 3000);
});

test('a repeated line in one list is a duplicate, the first one is created', async () => {
  const p = await pool();
  const inputs = [...list(1500), { url: 'http://10.1.0.7:3128' }];
  const out = await p.addMany(inputs);
  assert.equal(out[7]?.kind, 'created');
  assert.equal(out[1500]?.kind, 'duplicate');
  assert.equal(p.size, 1500);
});
