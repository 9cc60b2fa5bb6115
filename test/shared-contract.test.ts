import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { MemoryRateCounter, type RateCounter } from '../src/lib/rate-counter.ts';
import { type ChangeBus, MemoryBus, MemoryHub } from '../src/shared-state/bus.ts';
import type { Notice } from '../src/shared-state/notices.ts';
import { RedisBus } from '../src/shared-state/redis-bus.ts';
import { RedisRateCounter } from '../src/shared-state/redis-counter.ts';
import { RedisLink } from '../src/shared-state/redis-link.ts';
import { startFakeRedis } from './fixtures/fake-redis.ts';
import { startRedis, type TestRedis } from './helpers/redis.ts';

/*
 * One contract, two implementations (in-process and Redis), for each piece of shared state: the change
 * bus and the rate counters. Plus what only Redis can do wrong: an outage, where the counter falls back
 * to local counts and the link comes back by itself.
 */

const silent = pino({ level: 'silent' });
let redis: TestRedis;
const links: RedisLink[] = [];

async function link(): Promise<RedisLink> {
  const l = new RedisLink(redis.url, silent);
  links.push(l);
  await l.connect();
  return l;
}

before(async () => {
  redis = await startRedis();
});
after(async () => {
  for (const l of links) await l.close();
  await redis.close();
});

async function waitFor(check: () => boolean, ms = 3_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('not in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

type Pair = () => Promise<[ChangeBus, ChangeBus]>;
const buses: [string, Pair][] = [
  [
    'memory',
    async () => {
      const hub = new MemoryHub();
      return [new MemoryBus('a', hub), new MemoryBus('b', hub)];
    },
  ],
  ['redis', async () => [new RedisBus(await link(), 'a'), new RedisBus(await link(), 'b')]],
];

for (const [name, make] of buses) {
  describe(`change bus contract: ${name}`, () => {
    test('a notice reaches the other instance within 1 s, in order, and never its sender', async () => {
      const [a, b] = await make();
      const atA: Notice[] = [];
      const atB: { n: Notice; from: string }[] = [];
      a.subscribe((n) => atA.push(n));
      b.subscribe((n, from) => atB.push({ n, from }));
      await new Promise((r) => setTimeout(r, 100)); // Redis: the subscription is in place
      const t0 = Date.now();
      for (let i = 0; i < 20; i++) a.publish({ type: 'session', sid: `s${i}`, proxyId: 'p' });
      await waitFor(() => atB.length === 20, 1_000);
      assert.ok(Date.now() - t0 < 1_000);
      assert.deepEqual(
        atB.map((x) => (x.n.type === 'session' ? x.n.sid : '')),
        Array.from({ length: 20 }, (_, i) => `s${i}`),
      );
      assert.ok(atB.every((x) => x.from === 'a'));
      assert.equal(atA.length, 0, 'a sender never hears itself');
      assert.equal(a.up && b.up, true);
    });
  });
}

const counters: [string, () => Promise<RateCounter>][] = [
  ['memory', async () => new MemoryRateCounter()],
  ['redis', async () => new RedisRateCounter(await link(), `rota:test:${Math.random()}:`)],
];

for (const [name, make] of counters) {
  describe(`rate counter contract: ${name}`, () => {
    test('counts within a window, peeks without counting, starts again after it', async () => {
      const c = await make();
      for (let i = 1; i <= 5; i++) assert.equal((await c.incr('k', 300)).count, i);
      const peek = await c.peek('k', 300);
      assert.equal(peek.count, 5);
      assert.ok(peek.ttlMs > 0 && peek.ttlMs <= 300);
      assert.equal((await c.peek('k', 300)).count, 5, 'peek does not count');
      assert.equal((await c.incr('other', 300)).count, 1, 'keys are separate');
      await new Promise((r) => setTimeout(r, 350));
      assert.equal((await c.peek('k', 300)).count, 0);
      assert.equal((await c.incr('k', 300)).count, 1);
    });

    test('take checks and counts in one step: 1,000 takes in flight together get exactly the limit', async () => {
      const c = await make();
      const all = await Promise.all(Array.from({ length: 1_000 }, () => c.take('t', 60, 60_000, 1)));
      const under = all.filter((t) => t.type === 'under').map((t) => t.count);
      assert.deepEqual(
        under.sort((a, b) => a - b),
        Array.from({ length: 60 }, (_, i) => i + 1),
      );
      assert.ok(all.every((t) => t.ttlMs > 0 && t.ttlMs <= 60_000));
      assert.equal((await c.peek('t', 60_000)).count, 60, 'a refused take counts nothing');
      assert.deepEqual(await c.take('fresh', 2, 300, 0), { type: 'under', count: 0, ttlMs: 300 });
      assert.equal((await c.take('t', 60, 60_000, 0)).type, 'over', 'a check alone is refused at the limit');
      await c.take('w', 1, 300, 1);
      assert.equal((await c.take('w', 1, 300, 1)).type, 'over');
      await new Promise((r) => setTimeout(r, 350));
      const again = await c.take('w', 1, 300, 1);
      assert.deepEqual([again.type, again.count], ['under', 1], 'a new window');
    });
  });
}

describe('calls made together travel together', () => {
  test('counter calls of one event-loop turn are queued for one write, and each gets its own count', async () => {
    const l = await link();
    const c = new RedisRateCounter(l, `rota:pipe:${Math.random()}:`);
    await c.incr('warm', 60_000); // the script is known to Redis: EVALSHA only from here
    const calls = Array.from({ length: 20 }, () => c.incr('k', 60_000));
    assert.equal(l.cmd.autoPipelineQueueSize, 20, 'queued together, not written one by one');
    const counts = (await Promise.all(calls)).map((x) => x.count).sort((a, b) => a - b);
    assert.deepEqual(
      counts,
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
  });
});

describe('Redis forgets the scripts', () => {
  test('after SCRIPT FLUSH the counter sends the script again and keeps counting', async () => {
    const l = await link();
    const c = new RedisRateCounter(l, `rota:flush:${Math.random()}:`);
    assert.equal((await c.incr('k', 60_000)).count, 1);
    assert.equal(await l.cmd.script('FLUSH'), 'OK');
    assert.equal((await c.incr('k', 60_000)).count, 2, 'EVAL after NOSCRIPT, same key');
    assert.equal((await c.peek('k', 60_000)).count, 2);
    const calls = async (name: string) =>
      Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(await l.cmd.info('commandstats'))?.[1] ?? 0);
    const [sha, full] = [await calls('evalsha'), await calls('eval')];
    assert.equal((await c.incr('k', 60_000)).count, 3);
    assert.deepEqual(
      [await calls('evalsha'), await calls('eval')],
      [sha + 1, full],
      'by hash once Redis has it',
    );
  });
});

describe('Redis outage', () => {
  test('the counter answers from local counts while Redis is gone, and the link comes back', async () => {
    const l = await link();
    const c = new RedisRateCounter(l, 'rota:outage:');
    assert.equal((await c.incr('k', 60_000)).count, 1);
    await redis.stop();
    await waitFor(() => !l.up);
    const during = await Promise.all([c.incr('k', 60_000), c.incr('k', 60_000)]);
    assert.deepEqual(
      during.map((x) => x.count),
      [1, 2],
      'local counts, no error',
    );
    await redis.start();
    await waitFor(() => l.up, 5_000);
    assert.equal((await c.incr('fresh', 60_000)).count, 1, 'Redis again');
  });
});

describe('the notice subscription across reconnects', () => {
  test('notices reach the other instance again after Redis restarts', async () => {
    const [la, lb] = [await link(), await link()];
    const [a, b] = [new RedisBus(la, 'a'), new RedisBus(lb, 'b')];
    const heard: string[] = [];
    b.subscribe((n) => heard.push(n.type === 'session' ? n.sid : ''));
    await redis.stop();
    await waitFor(() => !la.up && !lb.up);
    await redis.start();
    await waitFor(() => la.up && lb.up, 5_000);
    // The subscriber connection comes back on its own schedule: publish until one is heard.
    for (let i = 0; heard.length === 0; i++) {
      assert.ok(i < 300, 'no notice heard within 3 s of Redis coming back');
      a.publish({ type: 'session', sid: `after${i}`, proxyId: 'p' });
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.match(heard[0] ?? '', /^after\d+$/);
  });

  test('closing while a re-subscribe is unanswered leaves no unhandled rejection', {
    timeout: 5_000,
  }, async () => {
    const fake = await startFakeRedis();
    const l = new RedisLink(fake.url, silent);
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      const first = fake.nextSubscribe();
      l.listen('c', () => {});
      await l.connect();
      await first;
      fake.mute = true;
      const again = fake.nextSubscribe();
      fake.dropAll();
      await again; // written after the reconnect, never answered
      await l.close();
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await l.close();
      await fake.close();
    }
  });
});
