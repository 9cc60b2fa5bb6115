import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { describe, it } from 'node:test';
import { keptLogger } from '../../test/helpers/inspect.ts';
import { InspectionAuthority } from './authority.ts';
import { LeafCache } from './leaves.ts';
import { newKeyPair } from './x509.ts';

/**
 * Runs `work` while a 1 ms interval timer measures how late it fires: the event loop's worst stall
 * and the 99th percentile of its stalls, in ms.
 */
async function lag(work: () => Promise<void>): Promise<{ max: number; p99: number }> {
  let last = performance.now();
  const gaps: number[] = [];
  const timer = setInterval(() => {
    const t = performance.now();
    gaps.push(t - last - 1);
    last = t;
  }, 1);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  gaps.sort((a, b) => a - b);
  return { max: gaps.at(-1) ?? 0, p99: gaps[Math.floor(gaps.length * 0.99)] ?? 0 };
}

const fmt = (l: { max: number; p99: number }) => `max ${l.max.toFixed(1)} p99 ${l.p99.toFixed(1)}`;

describe('inspection figures', () => {
  it('makes leaves without stalling the event loop, and serves kept contexts fast', async (t) => {
    const authority = new InspectionAuthority({ files: null, store: null, logger: keptLogger().logger });
    await authority.caPem();
    const leaves = new LeafCache({ authority, max: 10_000 });
    for (let i = 0; i < 30; i++) await leaves.contextFor(`warm${i}.test`);

    let t0 = performance.now();
    for (let i = 0; i < 100; i++) await newKeyPair();
    const keyMs = (performance.now() - t0) / 100;

    const idleLag = await lag(() => new Promise((r) => setTimeout(r, 1000)));
    t0 = performance.now();
    const seqLag = await lag(async () => {
      for (let i = 0; i < 100; i++) await leaves.contextFor(`seq${i}.test`);
    });
    const leafMs = (performance.now() - t0) / 100;

    t0 = performance.now();
    const parLag = await lag(async () => {
      await Promise.all(Array.from({ length: 100 }, (_, i) => leaves.contextFor(`par${i}.test`)));
    });
    const parMs = performance.now() - t0;

    const N = 200_000;
    t0 = performance.now();
    for (let i = 0; i < N; i++) await leaves.contextFor(`seq${i % 100}.test`);
    const perSecond = N / ((performance.now() - t0) / 1000);

    const figures = {
      keyPairMs: keyMs.toFixed(2),
      leafMs: leafMs.toFixed(2),
      lagIdleMs: fmt(idleLag),
      lagSequentialMs: fmt(seqLag),
      hundredConcurrentMs: parMs.toFixed(0),
      lagConcurrentMs: fmt(parLag),
      cachedContextForPerSecond: Math.round(perSecond),
    };
    t.diagnostic(JSON.stringify(figures));
    // The loop keeps turning while leaves are made one after another: 99% of its turns are late by
    // less than one leaf's JavaScript (certificate encoding), whatever the odd GC pause does to the max.
    assert.ok(seqLag.p99 < 50, `event loop p99 stall ${seqLag.p99} ms`);
    assert.ok(perSecond > 20_000, `${perSecond}/s from cache`);
  });
});
