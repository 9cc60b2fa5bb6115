import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { HeapTrimmer } from './heap-trim.ts';

const MB = 1024 * 1024;

function rig(o: { gc?: boolean; used?: number; committed?: number } = {}) {
  const s = { cpu: 0, gcs: 0, calls: 0, used: o.used ?? 30 * MB, committed: o.committed ?? 64 * MB };
  const t = new HeapTrimmer({
    gc:
      o.gc === false
        ? undefined
        : () => {
            s.gcs++;
            s.cpu += 20_000; // the GC's own 20 ms
            s.committed = s.used + MB;
          },
    cpuUs: () => s.cpu,
    heap: () => ({ committed: s.committed, used: s.used }),
    served: () => s.calls,
  });
  return { s, t };
}

test('trims once in the first quiet interval after start-up, not again until a busy one re-arms it', () => {
  const { s, t } = rig();
  s.cpu += 400_000; // start-up: 400 ms of CPU in the first second
  assert.equal(t.tick(), false);
  assert.equal(t.tick(), true);
  assert.equal(s.gcs, 1);
  // The GC's own CPU is not taken for traffic; quiet seconds after it do nothing.
  s.committed = 64 * MB;
  for (let i = 0; i < 40; i++) assert.equal(t.tick(), false);
  s.cpu += 300_000; // a burst of traffic re-arms it
  assert.equal(t.tick(), false);
  for (let i = 1; i < 30; i++) assert.equal(t.tick(), false, `quiet second ${i} after traffic`);
  assert.equal(t.tick(), true);
  assert.equal(s.gcs, 2);
});

test('after traffic, a lull shorter than 30 s is not trimmed (the GC would drop compiled code)', () => {
  const { s, t } = rig();
  s.cpu += 400_000;
  t.tick();
  assert.equal(t.tick(), true);
  for (let burst = 0; burst < 5; burst++) {
    s.committed = 64 * MB;
    s.cpu += 500_000; // load
    assert.equal(t.tick(), false);
    for (let i = 0; i < 10; i++) assert.equal(t.tick(), false); // a 10 s pause between loads
  }
  assert.equal(s.gcs, 1);
});

test('light traffic (under 5% of a core) counts as quiet; heavier traffic never sees a GC', () => {
  const { s, t } = rig();
  for (let i = 0; i < 20; i++) {
    s.cpu += 200_000;
    assert.equal(t.tick(), false);
  }
  assert.equal(s.gcs, 0);
  s.cpu += 40_000;
  assert.equal(t.tick(), true);
});

test('load from the first second (never quiet before it) waits 30 quiet seconds like any later trim', () => {
  const { s, t } = rig();
  for (let i = 0; i < 10; i++) {
    s.cpu += 600_000;
    s.calls += 3_000;
    assert.equal(t.tick(), false);
  }
  for (let i = 1; i < 30; i++) assert.equal(t.tick(), false, `quiet second ${i} after the load`);
  assert.equal(t.tick(), true);
  assert.equal(s.gcs, 1);
});

test('a few calls during start-up (a readiness probe, proxies added) keep its quick trim', () => {
  const { s, t } = rig();
  s.cpu += 400_000;
  s.calls += 12;
  assert.equal(t.tick(), false);
  assert.equal(t.tick(), true);
  assert.equal(s.gcs, 1);
});

test('no GC when there is little slack to give back', () => {
  const { s, t } = rig({ used: 30 * MB, committed: 34 * MB });
  assert.equal(t.tick(), false);
  assert.equal(s.gcs, 0);
});

test('a big heap (long pause) is trimmed only after a minute of quiet', () => {
  const { s, t } = rig({ used: 300 * MB, committed: 400 * MB });
  for (let i = 1; i < 60; i++) assert.equal(t.tick(), false, `interval ${i}`);
  assert.equal(t.tick(), true);
  assert.equal(s.gcs, 1);
});

test('without an exposed gc the trimmer is off and start() arms no timer', () => {
  const { s, t } = rig({ gc: false });
  assert.equal(t.enabled, false);
  t.start();
  assert.equal(t.tick(), false);
  assert.equal(s.gcs, 0);
});

test('on a real process with --expose-gc: the young generation goes back after a burst', () => {
  // A child grows its young generation with a burst of short-lived garbage, then idles; the trimmer's
  // GC must bring the committed heap down (this is what V8's memory reducer does not do under Node 24).
  const child = spawnSync(
    process.execPath,
    [
      '--expose-gc',
      '--max-semi-space-size=16',
      '--input-type=module',
      '-e',
      `
      import v8 from 'node:v8';
      import { processHeapTrimmer } from ${JSON.stringify(new URL('./heap-trim.ts', import.meta.url).href)};
      const keep = [];
      for (let i = 0; i < 400_000; i++) { const o = { i, s: 'x'.repeat(8) + i }; if (i % 8 === 0) keep.push(o); }
      const newSpace = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
      const before = newSpace();
      const t = processHeapTrimmer(undefined, { everyMs: 200 });
      t.start();
      setTimeout(() => { console.log(JSON.stringify({ before, after: newSpace(), trims: t.trims, kept: keep.length })); t.stop(); }, 1500);
      `,
    ],
    { encoding: 'utf8', timeout: 30_000 },
  );
  assert.equal(child.status, 0, child.stderr);
  const r = JSON.parse(child.stdout) as { before: number; after: number; trims: number };
  assert.equal(r.trims, 1);
  assert.ok(r.before >= 8 * MB, `the burst grew the young generation (${r.before} bytes)`);
  assert.ok(r.after <= r.before / 4, `young generation ${r.before} → ${r.after} bytes`);
});

test('past the first minute, even the first trim waits for 30 s of quiet (a load may have started)', () => {
  const { s, t } = rig();
  for (let i = 0; i < 70; i++) {
    s.cpu += 500_000; // busy from start-up on, past the first minute
    assert.equal(t.tick(), false);
  }
  for (let i = 1; i < 30; i++) assert.equal(t.tick(), false, `quiet second ${i}`);
  assert.equal(t.tick(), true);
});

test('traffic in the first minute makes even the first trim wait for 30 s of quiet', () => {
  // Start-up left little slack (no trim), then a load grew the heap: a 1 s pause right after it must
  // not be trimmed (the GC drops compiled code and the load's next seconds pay to compile it again).
  const { s, t } = rig({ used: 30 * MB, committed: 34 * MB });
  s.cpu += 400_000; // start-up
  assert.equal(t.tick(), false);
  assert.equal(t.tick(), false, 'quiet, but no slack to give back');
  s.committed = 64 * MB;
  for (let i = 0; i < 3; i++) {
    s.cpu += 600_000; // a load
    assert.equal(t.tick(), false);
  }
  for (let i = 1; i < 30; i++) assert.equal(t.tick(), false, `quiet second ${i} after the load`);
  assert.equal(t.tick(), true);
  assert.equal(s.gcs, 1);
});
