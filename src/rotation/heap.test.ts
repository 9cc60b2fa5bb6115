import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { makeEntry } from '../../test/helpers/rotation.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import { IndexedHeap } from './heap.ts';

interface Node {
  readonly entry: ProxyEntry;
  key: number;
}

type Op =
  | { kind: 'push'; key: number }
  | { kind: 'update'; pick: number; key: number }
  | { kind: 'delete'; pick: number }
  | { kind: 'find'; mod: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('push' as const), key: fc.integer({ min: 0, max: 20 }) }),
  fc.record({ kind: fc.constant('update' as const), pick: fc.nat(), key: fc.integer({ min: 0, max: 20 }) }),
  fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('find' as const), mod: fc.integer({ min: 1, max: 4 }) }),
);

describe('IndexedHeap', () => {
  it('findFirst returns the least node satisfying the predicate, through pushes, updates and deletes', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 150, size: 'max' }), (ops) => {
        const heap = new IndexedHeap<Node>((a, b) => a.key < b.key);
        const model = new Map<ProxyEntry, number>();
        let next = 0;
        for (const op of ops) {
          const live = [...model.keys()];
          const target =
            live.length > 0 && op.kind !== 'push' && op.kind !== 'find'
              ? live[op.pick % live.length]
              : undefined;
          if (op.kind === 'push') {
            const entry = makeEntry(`n${next++}`);
            heap.push({ entry, key: op.key });
            model.set(entry, op.key);
          } else if (op.kind === 'update' && target) {
            heap.update(target, (n) => {
              n.key = op.key;
            });
            model.set(target, op.key);
          } else if (op.kind === 'delete' && target) {
            heap.delete(target);
            model.delete(target);
          } else if (op.kind === 'find') {
            // Only nodes whose id number is a multiple of `mod` qualify.
            const ok = (e: ProxyEntry) => Number(e.record.id.slice(1)) % op.mod === 0;
            const keys = [...model].filter(([e]) => ok(e)).map(([, k]) => k);
            const got = heap.findFirst((n) => ok(n.entry));
            if (keys.length === 0) assert.equal(got, null);
            else assert.equal(got?.key, Math.min(...keys));
          }
          assert.equal(heap.size, model.size);
        }
      }),
      { numRuns: 300 },
    );
  });
});
