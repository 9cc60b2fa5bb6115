import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { DialBudget } from './dial.ts';
import { UpstreamError } from './types.ts';

test('a dial budget aborts with a timeout error of its own when it runs out', async () => {
  const b = new DialBudget(20);
  await sleep(60);
  assert.equal(b.signal.aborted, true);
  assert.ok(b.signal.reason instanceof UpstreamError);
  assert.equal((b.signal.reason as UpstreamError).kind, 'timeout');
});

test("with a parent, the parent's abort (and its reason) reaches the budget's signal", () => {
  const parent = new AbortController();
  const b = new DialBudget(10_000, parent.signal);
  const why = new Error('caller left');
  parent.abort(why);
  assert.equal(b.signal.aborted, true);
  assert.equal(b.signal.reason, why);
  b.done();
});

test('a parent already aborted aborts the budget at once; done() stops listening to the parent', () => {
  const gone = new AbortController();
  gone.abort(new Error('before'));
  assert.equal(new DialBudget(10_000, gone.signal).signal.aborted, true);
  const parent = new AbortController();
  const b = new DialBudget(10_000, parent.signal);
  b.done();
  parent.abort(new Error('after done'));
  assert.equal(b.signal.aborted, false, 'a finished dial is not aborted by its caller leaving later');
});
