import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

const MODULE = new URL('./tick-shape.ts', import.meta.url).href;

/**
 * In a fresh Node: nextTick used, then two full GCs with nothing queued; returns how many of nextTick's
 * computed-key store slots (DefineKeyedOwnPropertyInLiteral) then point at a cleared map.
 */
function clearedSlots(keep: boolean): { cleared: number; slots: number } {
  const script = `
    const { keepTickShape } = await import(${JSON.stringify(MODULE)});
    if (${keep} && !keepTickShape()) throw new Error('nothing kept');
    for (let i = 0; i < 50; i++) process.nextTick(() => {});
    await new Promise((r) => setTimeout(r, 20));
    globalThis.gc();
    globalThis.gc();
    await new Promise((r) => setTimeout(r, 20));
    %DebugPrint(process.nextTick);
  `;
  const r = spawnSync(
    process.execPath,
    ['--expose-gc', '--allow-natives-syntax', '--input-type=module', '-e', script],
    { encoding: 'utf8', timeout: 20_000 },
  );
  assert.equal(r.status, 0, r.stderr);
  // Each slot prints as "slot #N DefineKeyedOwnPropertyInLiteral <state> {" then "[N]: <map or [cleared]>".
  const slots = [...r.stdout.matchAll(/DefineKeyedOwnPropertyInLiteral \w+ \{\n\s*\[\d+\]: (.*)/g)];
  return { cleared: slots.filter((m) => m[1]?.includes('[cleared]')).length, slots: slots.length };
}

test("without a kept entry, a full GC clears nextTick's feedback maps (the trap this module avoids)", () => {
  const r = clearedSlots(false);
  assert.ok(r.slots >= 5, `nextTick's literal has its five stores (saw ${r.slots})`);
  assert.ok(r.cleared > 0, 'some slot is cleared');
});

test("with keepTickShape, nextTick's feedback maps survive full GCs", () => {
  const r = clearedSlots(true);
  assert.ok(r.slots >= 5);
  assert.equal(r.cleared, 0);
});

test('keepTickShape says it kept an entry, and a second call is a no-op that says so too', async () => {
  const { keepTickShape } = await import('./tick-shape.ts');
  assert.equal(keepTickShape(), true);
  assert.equal(keepTickShape(), true);
});
