import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IdentityIndex } from './identity.ts';
import type { ProxyEntry } from './pool.ts';
import { type ProxyRecord, publicUrl } from './types.ts';

function entry(port: number, username: string | null, reads?: { n: number }): ProxyEntry {
  const record = {
    id: `id-${port}-${username}`,
    protocol: 'http',
    host: '10.0.0.1',
    port,
    get username() {
      if (reads) reads.n++;
      return username;
    },
    password: null,
    weight: 1,
    country: null,
    tags: [],
    createdAt: 0,
    updatedAt: 0,
  } as ProxyRecord;
  return {
    record,
    url: publicUrl(record),
    country: null,
    exit: null,
    health: 'unknown',
    consecutiveFailures: 0,
    inFlight: 0,
    stats: { total: 0, success: 0, failed: 0, latencySumMs: 0 },
  };
}

const probe = (port: number, username: string | null) =>
  ({ protocol: 'http', host: '10.0.0.1', port, username }) as const;

test('identity is URL plus username: same address, other account is not a duplicate', () => {
  const ix = new IdentityIndex();
  const a = entry(1, 'alice');
  const b = entry(1, 'bob');
  const c = entry(2, null);
  for (const e of [a, b, c]) ix.add(e);
  assert.equal(ix.has(probe(1, 'alice')), true);
  assert.equal(ix.has(probe(1, 'bob')), true);
  assert.equal(ix.has(probe(1, 'carol')), false);
  assert.equal(ix.has(probe(1, null)), false);
  assert.equal(ix.has(probe(2, null)), true);
  assert.equal(ix.has(probe(2, 'alice')), false);
  ix.delete(a);
  assert.equal(ix.has(probe(1, 'alice')), false);
  assert.equal(ix.has(probe(1, 'bob')), true);
  ix.delete(b);
  ix.delete(c);
  assert.equal(ix.has(probe(1, 'bob')), false);
  assert.equal(ix.has(probe(2, null)), false);
});

test("a member's username is read only when an added proxy has its address", () => {
  const ix = new IdentityIndex();
  const reads = { n: 0 };
  for (let p = 1; p <= 1000; p++) ix.add(entry(p, `u${p}`, reads));
  assert.equal(reads.n, 0, 'adding members reads no username');
  assert.equal(ix.has(probe(5000, 'x')), false);
  assert.equal(reads.n, 0, 'a new address reads none');
  assert.equal(ix.has(probe(7, 'u7')), true);
  assert.equal(reads.n, 1, 'a shared address reads that member only');
});

test('members deferred at load are indexed on first use, whatever that use is', () => {
  // First use a lookup.
  const ix = new IdentityIndex();
  const loaded = [entry(1, 'alice'), entry(1, 'bob'), entry(2, null)];
  ix.defer(loaded);
  assert.equal(ix.has(probe(1, 'bob')), true);
  assert.equal(ix.has(probe(2, null)), true);
  assert.equal(ix.has(probe(3, null)), false);

  // First use an add of the same address: both the deferred and the new member are found, once each.
  const iy = new IdentityIndex();
  iy.defer([entry(1, 'alice')]);
  const carol = entry(1, 'carol');
  iy.add(carol);
  assert.equal(iy.has(probe(1, 'alice')), true);
  assert.equal(iy.has(probe(1, 'carol')), true);
  iy.delete(carol);
  assert.equal(iy.has(probe(1, 'carol')), false);
  assert.equal(iy.has(probe(1, 'alice')), true);

  // First use the removal of a deferred member: it is gone, the others stay.
  const iz = new IdentityIndex();
  const [a, b] = [entry(5, 'a'), entry(6, 'b')];
  iz.defer([a, b]);
  iz.delete(a);
  assert.equal(iz.has(probe(5, 'a')), false);
  assert.equal(iz.has(probe(6, 'b')), true);
});

test('a username of a deferred member is not read until an added proxy shares its address', () => {
  const ix = new IdentityIndex();
  const reads = { n: 0 };
  ix.defer([entry(1, 'alice', reads), entry(2, 'bob', reads)]);
  assert.equal(ix.has(probe(3, 'carol')), false);
  assert.equal(reads.n, 0);
  assert.equal(ix.has(probe(1, 'alice')), true);
  assert.equal(reads.n, 1);
});
