import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import { CallerGone, CLIENT_GONE, closeSignal, delay, responseGone } from './abort.ts';

test('closeSignal aborts with CLIENT_GONE when its socket closes', () => {
  const socket = new EventEmitter();
  const watch = closeSignal(socket);
  assert.equal(watch.signal.aborted, false);
  socket.emit('close');
  assert.equal(watch.signal.aborted, true);
  assert.equal(watch.signal.reason, CLIENT_GONE);
});

test('once released, the close listener is gone and the signal never aborts', () => {
  const socket = new EventEmitter();
  const watch = closeSignal(socket);
  assert.equal(socket.listenerCount('close'), 1);
  watch.release();
  assert.equal(socket.listenerCount('close'), 0);
  socket.emit('close');
  assert.equal(watch.signal.aborted, false);
});

test('CallerGone: each listener once at abort, none after removal, none added after the abort', () => {
  const gone = new CallerGone();
  const calls: string[] = [];
  const a = () => calls.push('a');
  const b = () => calls.push('b');
  const c = () => calls.push('c');
  gone.addEventListener('abort', a);
  gone.addEventListener('abort', b, { once: true });
  gone.addEventListener('abort', c);
  gone.removeEventListener('abort', b);
  gone.removeEventListener('abort', b); // twice: no harm
  assert.equal(gone.aborted, false);
  gone.abort(CLIENT_GONE);
  gone.abort(new Error('second')); // the first reason stays; nobody is called again
  assert.deepEqual(calls, ['a', 'c']);
  assert.equal(gone.aborted, true);
  assert.equal(gone.reason, CLIENT_GONE);
  gone.addEventListener('abort', a);
  assert.deepEqual(calls, ['a', 'c'], 'an AbortSignal does not call a listener added after its abort either');
});

test('CallerGone: a listener that removes another during the abort does not skip or repeat anyone', () => {
  const gone = new CallerGone();
  const calls: string[] = [];
  const second = () => calls.push('second');
  gone.addEventListener('abort', () => {
    calls.push('first');
    gone.removeEventListener('abort', second);
  });
  gone.addEventListener('abort', second);
  gone.abort(CLIENT_GONE);
  assert.deepEqual(calls, ['first', 'second'], 'the list was taken whole when the abort began');
});

test('delay: true once the time has passed, false at once when the signal aborts or had', async () => {
  assert.equal(await delay(5), true);
  const gone = new CallerGone();
  const t0 = performance.now();
  const waiting = delay(10_000, gone);
  setTimeout(() => gone.abort(CLIENT_GONE), 5);
  assert.equal(await waiting, false);
  assert.ok(performance.now() - t0 < 5_000, 'not after the full wait');
  assert.equal(await delay(10_000, gone), false, 'already aborted');
  const ac = new AbortController();
  const real = delay(10_000, ac.signal);
  ac.abort();
  assert.equal(await real, false, 'an AbortSignal is a CallerSignal too');
});

test('responseGone aborts when the response closes unfinished, not when it closed after finishing', () => {
  const left = Object.assign(new EventEmitter(), { writableFinished: false });
  const gone = responseGone(left);
  left.emit('close');
  assert.equal(gone.aborted, true);
  assert.equal(gone.reason, CLIENT_GONE);
  const answered = Object.assign(new EventEmitter(), { writableFinished: false });
  const kept = responseGone(answered);
  answered.writableFinished = true;
  answered.emit('close');
  assert.equal(kept.aborted, false);
});
