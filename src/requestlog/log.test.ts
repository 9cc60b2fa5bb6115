import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { AttemptRecord, CallRecord } from '../metrics/calls.ts';
import { pathOnly } from './entry.ts';
import { RECORD_BYTES_BOUND, REPLAY_MAX, RequestLog } from './log.ts';

let nextId = 1;
function call(over: Partial<CallRecord> = {}, attempts: AttemptRecord[] = []): CallRecord {
  return {
    id: nextId++,
    ok: true,
    latencyMs: 12,
    attempts:
      attempts.length > 0
        ? attempts
        : [{ proxyId: 'p1', attempt: 1, outcome: 'success', latencyMs: 12, status: 200 }],
    door: 'http',
    method: 'GET',
    scheme: 'http',
    host: 'a.example',
    port: 80,
    path: '/x',
    ...over,
  };
}

describe('request log', () => {
  it("a stream's reconnection gets the newest REPLAY_MAX finished calls after its id, oldest first", () => {
    const log = new RequestLog({ size: 5_000, now: () => 1_000 });
    const ids: number[] = [];
    for (let i = 0; i < 3_000; i++) {
      const c = call({ ok: false });
      ids.push(c.id ?? 0);
      log.onCall(c);
    }
    const all = log.after(0, {});
    assert.equal(all.length, REPLAY_MAX, 'Last-Event-ID: 0 does not send the whole ring');
    assert.equal(all.at(-1)?.call.id, ids.at(-1));
    assert.equal(all[0]?.call.id, ids[ids.length - REPLAY_MAX]);
    assert.deepEqual(
      log.after(ids.at(-3) ?? 0, {}).map((e) => e.call.id),
      ids.slice(-2),
    );
  });

  it('a reconnection resumes in the order calls were told, which is the order they ended, not began', () => {
    const log = new RequestLog({ size: 100, now: () => 1_000 });
    const told: { id: number; n: number }[] = [];
    log.subscribe((e) => told.push({ id: e.call.id ?? 0, n: e.told }));
    const long = call();
    const short = call();
    log.onCall(long);
    log.onCall(short);
    log.ended(short.id ?? 0, 1, 1);
    log.ended(long.id ?? 0, 1, 1);
    const failed = call({ ok: false });
    log.onCall(failed);
    assert.deepEqual(
      told.map((t) => t.id),
      [short.id, long.id, failed.id],
    );
    assert.deepEqual(
      told.map((t) => t.n),
      [1, 2, 3],
      'numbered as told',
    );
    // The client saw the first event (the short call) and reconnects: the long one is not lost.
    assert.deepEqual(
      log.after(1, {}).map((e) => e.call.id),
      [long.id, failed.id],
    );
    assert.deepEqual(log.after(3, {}), []);
  });

  it('keeps the newest ROTA_REQUEST_LOG_SIZE calls, newest first, and tells listeners once a call is over', () => {
    const log = new RequestLog({ size: 3, now: () => 1_000 });
    const told: number[] = [];
    log.subscribe((e) => told.push(e.call.id ?? 0));
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) {
      const c = call();
      ids.push(c.id ?? 0);
      log.onCall(c);
    }
    assert.deepEqual(told, [], 'answered calls wait for their end');
    const page = log.list({}, 1, 10);
    assert.equal(page.total, 3);
    assert.deepEqual(
      page.items.map((e) => e.call.id),
      ids.slice(2).reverse(),
    );
    assert.ok(page.items.every((e) => e.open));
    // Pages past the first, unfiltered (read without a scan) and filtered alike.
    for (const f of [{}, { host: 'a.example' }]) {
      const second = log.list(f, 2, 2);
      assert.deepEqual([second.total, second.items.map((e) => e.call.id)], [3, [ids[2]]], JSON.stringify(f));
      assert.deepEqual(log.list(f, 3, 2).items, []);
    }
    log.ended(ids[4] ?? 0, 10, 200);
    assert.deepEqual(told, [ids[4]]);
    const done = log.list({}, 1, 1).items[0];
    assert.equal(done?.open, false);
    assert.equal(done?.down, 200);
    const failed = call({ ok: false, errorCode: 'PROXY_POOL_EMPTY', attempts: [] });
    log.onCall(failed);
    assert.equal(told.at(-1), failed.id, 'a failed call is over at once');
    assert.equal(log.list({ outcome: 'no_proxy' }, 1, 10).total, 1);
  });

  it('takes an end told before its call (a hedged call reports late)', () => {
    const log = new RequestLog({ size: 10, now: () => 5 });
    const c = call();
    log.ended(c.id ?? 0, 1, 2);
    log.onCall(c);
    const e = log.list({}, 1, 1).items[0];
    assert.equal(e?.open, false);
    assert.equal(e?.up, 1);
  });

  it('filters by host, proxy, outcome, door and since; bans and failures apart', () => {
    let now = 0;
    const log = new RequestLog({ size: 100, now: () => now });
    const ban: AttemptRecord = {
      proxyId: 'p1',
      attempt: 1,
      outcome: 'target_error',
      latencyMs: 5,
      kind: 'banned',
      status: 403,
    };
    const ok: AttemptRecord = { proxyId: 'p2', attempt: 2, outcome: 'success', latencyMs: 5, status: 200 };
    now = 100;
    log.onCall(call({ host: 'b.example' }, [ban, ok]));
    now = 200;
    log.onCall(call({ door: 'connect', path: undefined, scheme: undefined }));
    assert.equal(log.list({ host: 'b.example' }, 1, 10).total, 1);
    assert.equal(log.list({ proxyId: 'p2' }, 1, 10).total, 1);
    assert.equal(log.list({ proxyId: 'p1' }, 1, 10).total, 2);
    assert.equal(log.list({ door: 'connect' }, 1, 10).total, 1);
    assert.equal(log.list({ since: 150 }, 1, 10).total, 1);
    const banned = log.list({ host: 'b.example' }, 1, 1).items[0];
    assert.equal(banned?.banSeen(), true);
    assert.equal(banned?.outcome(), 'success');
    assert.equal(banned?.status(), 200);
    assert.equal(banned?.proxyId(), 'p2');
  });

  it('keeps a path without its query or fragment, and no longer than 512 characters', () => {
    assert.equal(pathOnly('/a/b?token=secret'), '/a/b');
    assert.equal(pathOnly('/a#frag?x'), '/a');
    assert.equal(pathOnly('/plain'), '/plain');
    assert.equal(pathOnly(undefined), null);
    assert.equal(pathOnly(`/${'x'.repeat(1000)}`)?.length, 512);
  });

  it('size 0 keeps nothing but still tells listeners (per-host analytics, the access log)', () => {
    const log = new RequestLog({ size: 0, now: () => 0 });
    let told = 0;
    log.subscribe(() => told++);
    const c = call();
    log.onCall(c);
    log.ended(c.id ?? 0, 0, 0);
    assert.equal(told, 1);
    assert.equal(log.list({}, 1, 10).total, 0);
  });

  it('completes a call left open while thousands of later calls opened and ended (with and without the ring)', () => {
    for (const size of [10_000, 0]) {
      const bytes: number[] = [];
      const hosts = {
        recordCall() {},
        addBytes: (_h: string, _p: string | undefined, n: number) => bytes.push(n),
      };
      const log = new RequestLog({ size, now: () => 0, hosts });
      const first = call();
      log.onCall(first);
      // More than the open-call table's 4,096 entries: a later call takes the first one's entry.
      for (let i = 0; i < 5_000; i++) {
        const c = call();
        log.onCall(c);
        log.ended(c.id ?? 0, 0, 1);
      }
      log.ended(first.id ?? 0, 7, 8);
      assert.equal(bytes.length, 5_001);
      assert.equal(bytes.at(-1), 15, `size ${size}`);
      if (size > 0) assert.equal(log.list({}, 1, 10_000).items.find((e) => e.call.id === first.id)?.down, 8);
    }
  });

  it(`holds 10,000 records within ${RECORD_BYTES_BOUND} bytes each`, (t) => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const heap = () => {
      for (let i = 0; i < 3; i++) gc();
      return process.memoryUsage().heapUsed;
    };
    const hosts = Array.from({ length: 100 }, (_, i) => `site-${i}.example`);
    // What the engine hands over: its own record and attempts, the door's path string (query included).
    const make = (i: number): CallRecord =>
      call(
        {
          host: hosts[i % 100],
          // A long query (a signed URL, a token): cut off, and none of it kept alive by the path.
          path: `/catalog/item/${i}/page?session=${i}&q=shoes&sig=${'x'.repeat(2_000)}${i}`,
          sessionId: `s${i % 50}`,
        },
        [
          {
            proxyId: 'b1a7c2d4-0000-4000-8000-000000000001',
            attempt: 1,
            outcome: 'proxy_error',
            latencyMs: 30,
            kind: 'connect',
          },
          {
            proxyId: 'b1a7c2d4-0000-4000-8000-000000000002',
            attempt: 2,
            outcome: 'success',
            latencyMs: 80,
            status: 200,
          },
        ],
      );
    const log = new RequestLog({ size: 10_000, now: () => 0 });
    // Fill once so that the ring's own slots are counted too, then measure records replacing records.
    const before = heap();
    for (let i = 0; i < 10_000; i++) {
      const c = make(i);
      log.onCall(c);
      log.ended(c.id ?? 0, 100, 5_000);
    }
    const used = heap() - before;
    assert.equal(log.size, 10_000);
    t.diagnostic(`${Math.round(used / 10_000)} bytes per record`);
    assert.ok(used / 10_000 <= RECORD_BYTES_BOUND, `${Math.round(used / 10_000)} bytes per record`);
  });
});
