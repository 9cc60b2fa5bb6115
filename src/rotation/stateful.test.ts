import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { candidates, makeEntry } from '../../test/helpers/rotation.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import { GeoTargetedStrategy } from './geo-targeted.ts';
import { LeastUsedStrategy } from './least-used.ts';
import { RoundRobinStrategy } from './round-robin.ts';
import { SessionTable } from './sessions.ts';
import { RoundRobinCursor } from './shared.ts';

const ids = (es: readonly (ProxyEntry | null)[]) => es.map((e) => e?.record.id ?? null);

function downSet(members: readonly ProxyEntry[], mask: readonly boolean[]): Set<string> {
  return new Set(members.filter((_, i) => mask[i]).map((e) => e.record.id));
}

describe('round-robin strategy', () => {
  it('visits every eligible proxy exactly once per cycle, from wherever it stands', () => {
    const arb = fc.array(fc.boolean(), { minLength: 1, maxLength: 30, size: 'max' });
    fc.assert(
      fc.property(
        arb,
        fc.nat(50),
        fc.array(fc.boolean(), { maxLength: 30, size: 'max' }),
        (shape, warmup, mask) => {
          const members = shape.map((_, i) => makeEntry(`p${i}`));
          const s = new RoundRobinStrategy();
          for (let i = 0; i < warmup; i++) s.select(candidates(members), {});
          const down = downSet(members, mask);
          const c = candidates(members, down);
          const eligible = members.filter((e) => !down.has(e.record.id)).map((e) => e.record.id);
          for (let cycle = 0; cycle < 2; cycle++) {
            const got = ids(eligible.map(() => s.select(c, {})));
            assert.deepEqual([...got].sort(), [...eligible].sort());
          }
        },
      ),
    );
  });

  it('keeps its place when members before it are removed or it is removed itself', () => {
    const members = ['a', 'b', 'c', 'd', 'e'].map((id) => makeEntry(id));
    const s = new RoundRobinStrategy();
    const c = candidates(members);
    assert.deepEqual(ids([s.select(c, {}), s.select(c, {}), s.select(c, {})]), ['a', 'b', 'c']);
    members.splice(0, 1); // a, before the cursor
    assert.equal(s.select(c, {})?.record.id, 'd');
    members.splice(2, 1); // d, the last pick
    assert.deepEqual(ids([s.select(c, {}), s.select(c, {}), s.select(c, {})]), ['e', 'b', 'c']);
    members.push(makeEntry('f'));
    assert.deepEqual(ids([s.select(c, {}), s.select(c, {})]), ['e', 'f']);
  });
});

describe('least-used strategy', () => {
  const step = fc.record({
    start: fc.boolean(),
    pick: fc.nat(),
    down: fc.array(fc.boolean(), { maxLength: 12 }),
  });

  it('always picks the fewest in flight, then the fewest in total, among the usable', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.array(step, { maxLength: 200, size: 'max' }),
        (n, steps) => {
          const members = Array.from({ length: n }, (_, i) => makeEntry(`p${i}`, { total: i % 3 }));
          const s = new LeastUsedStrategy();
          for (const st of steps) {
            if (!st.start) {
              // A request through some member ends.
              const busy = members.filter((e) => e.inFlight > 0);
              const e = busy[st.pick % Math.max(1, busy.length)];
              if (!e) continue;
              e.inFlight--;
              e.stats.total++;
              s.inFlightChanged(e);
              s.record(e);
              continue;
            }
            const down = downSet(members, st.down);
            const got = s.select(candidates(members, down), {});
            const usable = members.filter((e) => !down.has(e.record.id));
            if (!got) {
              assert.equal(usable.length, 0);
              continue;
            }
            const key = (e: ProxyEntry) => e.inFlight * 1e6 + e.stats.total;
            assert.equal(key(got), Math.min(...usable.map(key)));
            got.inFlight++;
            s.inFlightChanged(got);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('spreads concurrent requests evenly', () => {
    const members = Array.from({ length: 7 }, (_, i) => makeEntry(`p${i}`));
    const s = new LeastUsedStrategy();
    for (let i = 0; i < 7 * 20 + 3; i++) {
      const e = s.select(candidates(members), {});
      assert.ok(e);
      e.inFlight++;
      s.inFlightChanged(e);
    }
    const loads = members.map((e) => e.inFlight);
    assert.ok(Math.max(...loads) - Math.min(...loads) <= 1, String(loads));
  });
});

/** The session table in front of a round-robin strategy, as the Selector puts it in front of any. */
class SessionHarness {
  readonly table: SessionTable;
  private readonly cursor = new RoundRobinCursor();
  constructor(now: () => number, ttl: number) {
    this.table = new SessionTable({ now, sessionTtlMs: ttl });
  }
  get sessionCount(): number {
    return this.table.size;
  }
  select(c: ReturnType<typeof candidates>, req: { sessionId?: string; exclude?: Set<string> }) {
    const ex = req.exclude;
    const ok = (e: ProxyEntry) => !ex?.has(e.record.id) && c.eligible(e);
    if (req.sessionId === undefined) return this.cursor.next(c.members, ok);
    return this.table.select(req.sessionId, ok, (usable) => this.cursor.next(c.members, usable));
  }
  record(e: ProxyEntry, outcome: { ok: boolean; proxyFault: boolean; latencyMs: number }): void {
    this.table.record(e, outcome);
  }
  removed(e: ProxyEntry): void {
    this.table.removed(e);
  }
}

describe('session table', () => {
  function setup(n = 4, ttl = 1000) {
    const clock = { t: 0 };
    const members = Array.from({ length: n }, (_, i) => makeEntry(`p${i}`));
    const s = new SessionHarness(() => clock.t, ttl);
    return { clock, members, s };
  }

  it('keeps each session on one proxy across interleaved traffic while it is not idle for the TTL', () => {
    const traffic = fc.array(fc.record({ session: fc.nat(5), advance: fc.nat(400) }), {
      maxLength: 150,
      size: 'max',
    });
    let stuck = 0;
    fc.assert(
      fc.property(traffic, (reqs) => {
        const { clock, members, s } = setup(4, 1000);
        const pins = new Map<string, { id: string; at: number }>();
        for (const r of reqs) {
          clock.t += r.advance;
          if (r.session === 0) {
            assert.ok(s.select(candidates(members), {}), 'no session: round-robin');
            continue;
          }
          const sid = `s${r.session}`;
          const got = s.select(candidates(members), { sessionId: sid })?.record.id;
          assert.ok(got);
          const before = pins.get(sid);
          if (before !== undefined && clock.t - before.at < 1000) {
            assert.equal(got, before.id, `${sid} moved after ${clock.t - before.at} ms idle`);
            stuck++;
          }
          pins.set(sid, { id: got, at: clock.t });
        }
      }),
      { numRuns: 200 },
    );
    assert.ok(stuck > 1000, `only ${stuck} sticky checks`);
  });

  it('re-pins after a proxy fault, when the pin is down or excluded, and when it is removed', () => {
    const { members, s } = setup(4);
    const c = candidates(members);
    const first = s.select(c, { sessionId: 'x' });
    assert.ok(first);
    s.record(first, { ok: false, proxyFault: false, latencyMs: 5 });
    assert.equal(s.select(c, { sessionId: 'x' }), first, 'a target failure is not the proxy’s fault');
    s.record(first, { ok: false, proxyFault: true, latencyMs: 5 });
    const second = s.select(c, { sessionId: 'x' });
    assert.ok(second && second !== first);
    assert.equal(s.select(c, { sessionId: 'x' }), second, 'sticky again on the new proxy');
    const third = s.select(candidates(members, new Set([second.record.id])), { sessionId: 'x' });
    assert.ok(third && third !== second);
    const fourth = s.select(c, { sessionId: 'x', exclude: new Set([third.record.id]) });
    assert.ok(fourth && fourth !== third);
    members.splice(members.indexOf(fourth), 1);
    s.removed(fourth);
    const fifth = s.select(c, { sessionId: 'x' });
    assert.ok(fifth && fifth !== fourth && members.includes(fifth));
  });

  it('forgets a session idle for the TTL; use within the TTL extends it', () => {
    const { clock, members, s } = setup(3, 1000);
    const c = candidates(members);
    const first = s.select(c, { sessionId: 'x' });
    clock.t += 999;
    assert.equal(s.select(c, { sessionId: 'x' }), first);
    clock.t += 999;
    assert.equal(s.select(c, { sessionId: 'x' }), first, 'the last use extended the TTL');
    clock.t += 1000;
    const after = s.select(c, { sessionId: 'x' });
    assert.ok(after && after !== first, 'expired: a fresh round-robin pick');
    assert.equal(s.sessionCount, 1);
    clock.t += 5000;
    s.select(c, { sessionId: 'y' });
    assert.equal(s.sessionCount, 1, 'idle sessions are dropped, not kept forever');
  });
});

describe('geo-targeted strategy', () => {
  const COUNTRIES = ['US', 'DE', 'FR', null];

  it('picks a usable member of the requested country when there is one, else any usable member', () => {
    const shape = fc.array(fc.record({ country: fc.nat(3), down: fc.boolean() }), {
      maxLength: 20,
      size: 'max',
    });
    fc.assert(
      fc.property(
        shape,
        fc.array(fc.constantFrom('US', 'de', 'FR', 'JP', undefined), { maxLength: 20, size: 'max' }),
        (ms, reqs) => {
          const members = ms.map((m, i) => makeEntry(`p${i}`, { country: COUNTRIES[m.country] ?? null }));
          const down = downSet(
            members,
            ms.map((m) => m.down),
          );
          const s = new GeoTargetedStrategy();
          for (const country of reqs) {
            const got = s.select(candidates(members, down), { country });
            const usable = members.filter((e) => !down.has(e.record.id));
            if (!got) {
              assert.equal(usable.length, 0);
              continue;
            }
            const matching = usable.filter((e) => e.record.country === country?.toUpperCase());
            if (country !== undefined && matching.length > 0) assert.ok(matching.includes(got));
          }
        },
      ),
    );
  });

  it('with no member of the country, a gateway that renders {country} comes before any other member', () => {
    const de = makeEntry('de1', { country: 'DE' });
    const gw = makeEntry('gw', { country: 'DE' });
    const rendering = { ...gw, record: { ...gw.record, usernameTemplate: 'c-{session}-country-{country}' } };
    const members = [de, rendering];
    const s = new GeoTargetedStrategy();
    for (let i = 0; i < 4; i++)
      assert.equal(s.select(candidates(members), { country: 'FR' })?.record.id, 'gw');
    const both = new Set([0, 1, 2, 3].map(() => s.select(candidates(members), { country: 'DE' })?.record.id));
    assert.deepEqual([...both].sort(), ['de1', 'gw'], 'its own country as any member');
    assert.equal(
      s.select(candidates(members, new Set(['gw'])), { country: 'FR' })?.record.id,
      'de1',
      'else any',
    );
  });

  it('rotates through the matching members and follows pool changes', () => {
    const members = [
      makeEntry('us1', { country: 'US' }),
      makeEntry('de1', { country: 'DE' }),
      makeEntry('us2', { country: 'US' }),
    ];
    const s = new GeoTargetedStrategy();
    const c = candidates(members);
    const us = () => s.select(c, { country: 'US' })?.record.id;
    assert.deepEqual([us(), us(), us()], ['us1', 'us2', 'us1']);
    const us3 = makeEntry('us3', { country: 'US' });
    members.push(us3);
    s.added(us3);
    assert.deepEqual([us(), us()], ['us2', 'us3']);
    const [removed] = members.splice(0, 1);
    assert.ok(removed);
    s.removed(removed);
    assert.deepEqual([us(), us(), us()], ['us2', 'us3', 'us2']);
    assert.equal(s.select(c, { country: 'JP' })?.record.id, 'de1', 'no match: any usable member');
  });
});
