import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RotaError } from '../errors/rota-error.ts';
import { MemoryStore } from '../store/memory.ts';
import { Pool } from './pool.ts';
import type { ProxyRecord } from './types.ts';

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
    (e: unknown) => e instanceof RotaError && e.code === 'PROXY_ALREADY_EXISTS',
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

test('a member removed while load() reads later pages leaves its identity free', async () => {
  const first = await pool();
  const [a, b] = (await first.addMany(list(2))).map((o) => (o.kind === 'created' ? o.entry.record : null));
  assert.ok(a && b);
  // A store that hands out its records a page at a time; between the pages, the test removes `a`.
  let p: Pool | null = null;
  class Paged extends MemoryStore {
    override async *loadPages(): AsyncIterable<readonly ProxyRecord[]> {
      yield [a as ProxyRecord];
      await p?.remove((a as ProxyRecord).id);
      yield [b as ProxyRecord];
    }
  }
  const paged = new Paged();
  await paged.open();
  await paged.insertMany([a, b]);
  p = new Pool(paged, () => Date.now());
  await p.load();
  assert.deepEqual(
    p.all().map((e) => e.record.id),
    [b.id],
  );
  // Were `a` still indexed, this would be refused as a duplicate.
  const again = await p.add({ url: `http://${a.host}:${a.port}` });
  assert.equal(again.url, `http://${a.host}:${a.port}`);
  await assert.rejects(p.add({ url: `http://${b.host}:${b.port}` }), /already exists/);
});
