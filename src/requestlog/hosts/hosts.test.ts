import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttemptRecord, CallRecord } from '../../metrics/calls.ts';
import { deliveredOf } from '../entry.ts';
import { HostAnalytics, MAX_HOSTS } from './hosts.ts';
import { SLOT_MS } from './slots.ts';

let nextId = 1;

/** One call to `host` through `attempts`, over with 1,000 bytes (100 up, 900 down). */
function record(h: HostAnalytics, host: string, attempts: AttemptRecord[], latencyMs = 20): void {
  const call: CallRecord = { id: nextId++, ok: true, latencyMs, attempts, host, door: 'http', method: 'GET' };
  h.recordCall(call);
  h.addBytes(host, deliveredOf(call)?.proxyId, 1_000);
}

const success = (proxyId: string, latencyMs = 20): AttemptRecord => ({
  proxyId,
  attempt: 1,
  outcome: 'success',
  latencyMs,
  status: 200,
});

describe('per-host analytics', () => {
  it('holds the heavy hitters among 100,000 distinct hosts within its bound of 1,000', () => {
    const now = 10 * SLOT_MS;
    const h = new HostAnalytics({ now: () => now });
    const heavy = ['big-1.example', 'big-2.example', 'big-3.example'];
    for (let i = 0; i < 100_000; i++) {
      record(h, `host-${i}.example`, [success('p')]);
      // Every tenth call goes to one of three busy sites: 10,000 calls between them.
      if (i % 10 === 0) record(h, heavy[(i / 10) % 3] ?? '', [success('p')]);
    }
    assert.equal(h.size, MAX_HOSTS);
    const top = h.top(3);
    assert.deepEqual(top.map((r) => r.host).sort(), heavy);
    for (const r of top) {
      // Space-Saving: the count is over by at most the error it inherited, never under.
      assert.ok(r.last_1h.requests >= 3_333, `${r.host}: ${r.last_1h.requests}`);
      assert.ok(r.count_error <= 100, `${r.host}: error ${r.count_error}`);
    }
  });

  it('counts bans apart from failures: a proxy refused by the site keeps its success rate there', () => {
    const now = 3 * SLOT_MS;
    const h = new HostAnalytics({ now: () => now });
    const ban: AttemptRecord = {
      proxyId: 'banned',
      attempt: 1,
      outcome: 'target_error',
      latencyMs: 10,
      kind: 'banned',
      status: 403,
    };
    const fault: AttemptRecord = {
      proxyId: 'broken',
      attempt: 1,
      outcome: 'proxy_error',
      latencyMs: 10,
      kind: 'connect',
    };
    for (let i = 0; i < 4; i++) record(h, 'site.example', [ban, { ...success('clean', 40), attempt: 2 }]);
    record(h, 'site.example', [fault, { ...success('clean', 40), attempt: 2 }]);
    const detail = h.host('site.example');
    assert.ok(detail);
    assert.equal(detail.row.last_1h.requests, 5);
    assert.equal(detail.row.last_1h.successes, 5);
    assert.equal(detail.row.last_1h.bans, 4);
    assert.equal(detail.row.last_1h.failures, 0);
    assert.equal(detail.row.last_1h.bytes, 5_000);
    const by = new Map(detail.proxies.map((p) => [p.proxy_id, p.last_1h]));
    assert.deepEqual([by.get('banned')?.bans, by.get('banned')?.failures], [4, 0]);
    assert.deepEqual([by.get('broken')?.bans, by.get('broken')?.failures], [0, 1]);
    assert.equal(by.get('clean')?.successes, 5);
    assert.equal(by.get('clean')?.bytes, 5_000, 'the bytes are the delivering proxy’s');
    const p50 = by.get('clean')?.p50_ms ?? 0;
    assert.ok(p50 > 30 && p50 < 55, `p50 ${p50}`);
  });

  it('forgets what is older than the hour, and the 15-minute window holds three slots', () => {
    let now = 100 * SLOT_MS;
    const h = new HostAnalytics({ now: () => now });
    record(h, 'old.example', [success('p')]);
    now += 4 * SLOT_MS;
    record(h, 'old.example', [success('p')]);
    let row = h.host('old.example')?.row;
    assert.equal(row?.last_1h.requests, 2);
    assert.equal(row?.last_15m.requests, 1);
    now += 12 * SLOT_MS;
    row = h.host('old.example')?.row;
    assert.equal(row?.last_1h.requests, 0);
    assert.deepEqual(h.top(10), [], 'a host gone quiet is not listed');
  });
});
