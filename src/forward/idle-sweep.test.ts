import assert from 'node:assert/strict';
import type { Duplex } from 'node:stream';
import { test } from 'node:test';
import { IdleSweeper } from './idle-sweep.ts';

/** A socket as the sweeper sees it: a byte counter. */
function fakeSocket(): Duplex & { bytesRead: number } {
  return { bytesRead: 0 } as unknown as Duplex & { bytesRead: number };
}

function clock() {
  let now = 1_000;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

test('a silent tunnel is idle once idleMs have passed since it was watched, not before', () => {
  const c = clock();
  const sweeper = new IdleSweeper(1_000, { intervalMs: 60_000, now: c.now });
  let idle = 0;
  const stop = sweeper.watch(fakeSocket(), fakeSocket(), () => idle++);
  c.advance(999);
  sweeper.sweep();
  assert.equal(idle, 0);
  c.advance(1);
  sweeper.sweep();
  assert.equal(idle, 1);
  assert.equal(sweeper.size, 0, 'reported once, then forgotten');
  sweeper.sweep();
  assert.equal(idle, 1);
  stop();
});

test('bytes read by either socket make the tunnel active again', () => {
  const c = clock();
  const sweeper = new IdleSweeper(1_000, { intervalMs: 60_000, now: c.now });
  const [client, upstream] = [fakeSocket(), fakeSocket()];
  let idle = 0;
  const stop = sweeper.watch(client, upstream, () => idle++);
  for (const s of [client, upstream, client]) {
    c.advance(900);
    s.bytesRead += 10;
    sweeper.sweep();
  }
  c.advance(900);
  sweeper.sweep();
  assert.equal(idle, 0, 'each sweep saw progress within the last idleMs');
  c.advance(100);
  sweeper.sweep();
  assert.equal(idle, 1);
  stop();
});

test('a tunnel no longer watched is never reported; the timer stops with the last one', async () => {
  const sweeper = new IdleSweeper(50, { intervalMs: 10 });
  let idle = 0;
  const stop = sweeper.watch(fakeSocket(), fakeSocket(), () => idle++);
  assert.equal(sweeper.size, 1);
  stop();
  assert.equal(sweeper.size, 0);
  await new Promise((r) => setTimeout(r, 120));
  assert.equal(idle, 0);
});

test('the real timer finds a silent tunnel between idleMs and idleMs + the interval', async () => {
  const sweeper = new IdleSweeper(100, { intervalMs: 25 });
  const t0 = performance.now();
  const at = await new Promise<number>((resolve) => {
    sweeper.watch(fakeSocket(), fakeSocket(), () => resolve(performance.now() - t0));
  });
  assert.ok(at >= 100, `closed after ${at.toFixed(0)} ms`);
  assert.ok(at < 100 + 25 + 200, `closed after ${at.toFixed(0)} ms (the interval plus scheduling slack)`);
  assert.equal(sweeper.size, 0);
});
