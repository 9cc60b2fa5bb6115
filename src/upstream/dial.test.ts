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

test("the caller's signal aborting reaches the budget's signal as an `aborted` error", () => {
  const parent = new AbortController();
  const b = new DialBudget(10_000, { deadline: performance.now() + 10_000, signal: parent.signal });
  parent.abort(new Error('caller left'));
  assert.equal(b.signal.aborted, true);
  assert.equal((b.signal.reason as UpstreamError).kind, 'aborted');
  b.done();
});

test('a signal already aborted aborts the budget at once; done() stops listening to it', () => {
  const gone = new AbortController();
  gone.abort(new Error('before'));
  const deadline = performance.now() + 10_000;
  assert.equal(new DialBudget(10_000, { deadline, signal: gone.signal }).signal.aborted, true);
  const parent = new AbortController();
  const b = new DialBudget(10_000, { deadline, signal: parent.signal });
  b.done();
  parent.abort(new Error('after done'));
  assert.equal(b.signal.aborted, false, 'a finished dial is not aborted by its caller leaving later');
});

test('a deadline before the connect budget ends the dial first, with its own timeout message', async () => {
  const b = new DialBudget(10_000, { deadline: performance.now() + 20 });
  await sleep(60);
  assert.equal(b.signal.aborted, true);
  const why = b.signal.reason as UpstreamError;
  assert.equal(why.kind, 'timeout');
  assert.match(why.message, /deadline reached before the tunnel was open/);
});

test('without a connect budget (a SOCKS dialer keeps its own) only the deadline ends the dial', async () => {
  const b = new DialBudget(null, { deadline: performance.now() + 20 });
  await sleep(60);
  assert.match((b.signal.reason as UpstreamError).message, /deadline reached/);
});
