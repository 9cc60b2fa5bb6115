import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

const PRIMER = new URL('./tick-primer.ts', import.meta.url).href;

/**
 * V8's optimisation status of process.nextTick 200 ms after the script below ran in a fresh Node
 * (%GetOptimizationStatus: bit 4 is "optimized", by Maglev or TurboFan), with or without the primer.
 */
function nextTickStatus(prime: boolean): number {
  const script = `
    import { primeNextTick } from ${JSON.stringify(PRIMER)};
    ${prime ? 'primeNextTick();' : ''}
    setTimeout(() => process.stdout.write(String(%GetOptimizationStatus(process.nextTick))), 200);
  `;
  const r = spawnSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(r.status, 0, r.stderr);
  return Number(r.stdout);
}

const OPTIMIZED = 1 << 4;

test('the primer has process.nextTick compiled from fresh feedback before the server loads', () => {
  // Without it, a fresh process leaves nextTick in the interpreter: the compile would wait for load.
  assert.equal(nextTickStatus(false) & OPTIMIZED, 0);
  assert.notEqual(nextTickStatus(true) & OPTIMIZED, 0);
});

test('the primer spreads its rounds over event-loop turns and queues every tick', async () => {
  const { primeNextTick } = await import('./tick-primer.ts');
  let ticks = 0;
  primeNextTick(3, 100, (fn) => {
    ticks++;
    process.nextTick(fn);
  });
  assert.equal(ticks, 100, 'the first round runs at once, the others in later turns');
  let turns = 0;
  while (ticks < 300) {
    await new Promise((r) => setImmediate(r));
    assert.ok(++turns < 10, 'every round runs within a few turns');
  }
  await new Promise((r) => setImmediate(r));
  assert.equal(ticks, 300, 'and no more');
});
