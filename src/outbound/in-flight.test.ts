import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ProxyEntry } from '../pool/pool.ts';
import { InFlight, type Run } from './in-flight.ts';

const entry = {} as ProxyEntry;

/** A run whose result the test decides, cancellable unless `fixed`. */
function run(n: number, startedAt: number, hedgeAt: number | null, fixed = false) {
  let settle!: (v: string) => void;
  const done = new Promise<string>((r) => {
    settle = r;
  });
  const seen = { cancelled: false, detached: false };
  const r: Run<string> = {
    entry,
    n,
    startedAt,
    done,
    hedgeAt,
    stalled: false,
    cancel: fixed
      ? null
      : () => {
          seen.cancelled = true;
          settle(`cancelled ${n}`);
        },
    detach: fixed ? null : () => (seen.detached = true),
  };
  return { r, settle, seen };
}

describe('InFlight', () => {
  it('hands back a lone attempt when it ends', async () => {
    const f = new InFlight<string>();
    const a = run(1, 0, null, true);
    f.add(a.r);
    a.settle('ok');
    const ev = await f.next(() => performance.now());
    assert.deepEqual(ev.type === 'done' && [ev.run.n, ev.value], [1, 'ok']);
    assert.equal(f.size, 0);
  });

  it('reports the hedge time once, marking the attempt stalled', async () => {
    const f = new InFlight<string>();
    const a = run(1, 0, performance.now() + 20);
    f.add(a.r);
    assert.equal(f.allStalled(), false);
    assert.equal((await f.next(() => performance.now())).type, 'hedge');
    assert.equal(a.r.stalled, true);
    assert.equal(a.r.hedgeAt, null, 'consumed: no second hedge for it');
    assert.equal(f.allStalled(), true);
    const b = run(2, 1, null);
    f.add(b.r);
    assert.equal(f.allStalled(), false);
    b.settle('fast');
    const ev = await f.next(() => performance.now());
    assert.ok(ev.type === 'done' && ev.run === b.r);
    assert.equal(f.size, 1);
  });

  it('never reports a hedge before its time, even when the timer fires early', async () => {
    const f = new InFlight<string>();
    const t0 = performance.now();
    const a = run(1, t0, t0 + 60);
    f.add(a.r);
    // The first reading runs 40 ms ahead, as a stale event-loop clock would make the timer early.
    let calls = 0;
    const now = () => performance.now() + (calls++ === 0 ? 40 : 0);
    assert.equal((await f.next(now)).type, 'hedge');
    assert.ok(performance.now() - t0 >= 59, `${performance.now() - t0} ms`);
    a.settle('late');
  });

  it('on release, leaves an overtaken attempt running and cancels a later one', async () => {
    const f = new InFlight<string>();
    const early = run(1, 10, null);
    const winner = run(2, 20, null);
    const late = run(3, 30, null);
    for (const x of [early, late]) f.add(x.r);
    const behind = await f.release(winner.r);
    assert.deepEqual(
      behind.map((r) => r.n),
      [1],
    );
    assert.equal(early.seen.detached, true, 'the caller leaving no longer cancels it');
    assert.equal(early.seen.cancelled, false);
    assert.equal(late.seen.cancelled, true);
    assert.equal(f.size, 0);
  });

  it('without a winner, cancels everything', async () => {
    const f = new InFlight<string>();
    const a = run(1, 10, null);
    f.add(a.r);
    assert.deepEqual(await f.release(null), []);
    assert.equal(a.seen.cancelled, true);
  });
});
