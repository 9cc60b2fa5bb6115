import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BulkGate, nextTurn } from './turns.ts';

test('bulk writes run one at a time, and an operation in whenIdle() comes after them', async () => {
  const gate = new BulkGate();
  const log: string[] = [];
  const write = (name: string) =>
    gate.run(async () => {
      log.push(`${name} start`);
      for (let i = 0; i < 3; i++) await nextTurn();
      log.push(`${name} end`);
    });
  const a = write('a');
  const b = write('b');
  await nextTurn();
  const waited = gate.whenIdle(() => log.push('idle'));
  await Promise.all([a, b, waited]);
  assert.deepEqual(log.slice(0, 4), ['a start', 'a end', 'b start', 'b end']);
  assert.equal(log.at(-1), 'idle');
});

test('a failing bulk write rejects with its error and frees the gate', async () => {
  const gate = new BulkGate();
  await assert.rejects(
    gate.run(async () => {
      await nextTurn();
      throw new Error('boom');
    }),
    /boom/,
  );
  assert.equal(await gate.whenIdle(() => 'free'), 'free');
  assert.equal(await gate.run(async () => 42), 42);
});
