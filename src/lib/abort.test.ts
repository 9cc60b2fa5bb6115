import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import { CLIENT_GONE, closeSignal } from './abort.ts';

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
