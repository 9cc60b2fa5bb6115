import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { candidates, makeEntry, seededRandom } from '../../test/helpers/rotation.ts';
import { STRATEGIES, type StrategyName } from '../config.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import { createStrategy } from './index.ts';
import type { Strategy } from './types.ts';

const COUNTRIES = ['US', 'DE', 'FR', null] as const;

type Op =
  | { kind: 'add'; country: number; weight: number }
  | { kind: 'remove'; pick: number }
  | { kind: 'select'; down: number; exclude: number; session: number; country: number }
  | { kind: 'record'; pick: number; ok: boolean; proxyFault: boolean; latency: number }
  | { kind: 'flight'; pick: number; delta: 1 | -1 }
  | { kind: 'advance'; ms: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('add' as const),
    country: fc.nat(3),
    weight: fc.double({ min: 0.01, max: 100, noNaN: true }),
  }),
  fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('select' as const),
      // Often nothing is down or excluded, sometimes a random subset is.
      down: fc.oneof(fc.constant(0), fc.nat()),
      exclude: fc.oneof(fc.constant(0), fc.nat()),
      session: fc.nat(3),
      country: fc.nat(4),
    }),
  },
  fc.record({
    kind: fc.constant('record' as const),
    pick: fc.nat(),
    ok: fc.boolean(),
    proxyFault: fc.boolean(),
    latency: fc.integer({ min: 0, max: 5000 }),
  }),
  fc.record({
    kind: fc.constant('flight' as const),
    pick: fc.nat(),
    delta: fc.constantFrom(1 as const, -1 as const),
  }),
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 120_000 }) }),
);

/** Ids chosen by the bits of `mask`, over the members' positions. */
function subset(members: readonly ProxyEntry[], mask: number): Set<string> {
  const out = new Set<string>();
  members.forEach((e, i) => {
    if (i < 31 && (mask >>> i) & 1) out.add(e.record.id);
  });
  return out;
}

/** How often selections found a member and found none: the generator must exercise both. */
const seen = { picked: 0, none: 0, removedBetween: 0 };

/** Drives a strategy the way the pool and the request path do, checking the contract on every select. */
class Harness {
  readonly members: ProxyEntry[] = [];
  private next = 0;
  readonly clock = { t: 0 };
  strategy: Strategy | null = null;

  add(country: number, weight: number): void {
    const e = makeEntry(`p${this.next++}`, {
      weight,
      country: COUNTRIES[country % COUNTRIES.length] ?? null,
    });
    this.members.push(e);
    this.strategy?.added?.(e);
  }

  remove(pick: number): void {
    if (this.members.length === 0) return;
    const [e] = this.members.splice(pick % this.members.length, 1);
    if (e) this.strategy?.removed?.(e);
    seen.removedBetween++;
  }

  select(s: Strategy, op: Extract<Op, { kind: 'select' }>): void {
    const down = subset(this.members, op.down);
    const exclude = subset(this.members, op.exclude);
    const session = op.session === 0 ? undefined : `s${op.session}`;
    const country = ['US', 'DE', 'JP', undefined, 'fr'][op.country];
    const got = s.select(candidates(this.members, down), { exclude, sessionId: session, country });
    const usable = this.members.filter((e) => !down.has(e.record.id) && !exclude.has(e.record.id));
    if (got === null) {
      assert.equal(usable.length, 0, `${s.name} returned null with ${usable.length} usable`);
      seen.none++;
      return;
    }
    seen.picked++;
    assert.ok(this.members.includes(got), `${s.name} returned a non-member`);
    assert.ok(!down.has(got.record.id), `${s.name} returned an ineligible member`);
    assert.ok(!exclude.has(got.record.id), `${s.name} returned an excluded member`);
  }

  apply(s: Strategy, op: Op): void {
    const pickOf = (n: number) => this.members[n % Math.max(1, this.members.length)];
    if (op.kind === 'add') this.add(op.country, op.weight);
    else if (op.kind === 'remove') this.remove(op.pick);
    else if (op.kind === 'select') this.select(s, op);
    else if (op.kind === 'advance') this.clock.t += op.ms;
    else if (op.kind === 'record') {
      const e = pickOf(op.pick);
      if (e) s.record?.(e, { ok: op.ok, proxyFault: !op.ok && op.proxyFault, latencyMs: op.latency });
    } else {
      const e = pickOf(op.pick);
      if (e && e.inFlight + op.delta >= 0) {
        e.inFlight += op.delta;
        if (op.delta < 0) e.stats.total++;
        s.inFlightChanged?.(e);
      }
    }
  }
}

function contractProperty(name: StrategyName) {
  return fc.property(
    fc.integer({ min: 0, max: 8 }),
    fc.array(opArb, { maxLength: 60, size: 'max' }),
    fc.integer(),
    (initial, ops, seed) => {
      const h = new Harness();
      // Members that exist before the strategy does: it must find them without notifications.
      for (let i = 0; i < initial; i++) h.add(i, 1 + i);
      const s = createStrategy(name, {
        random: seededRandom(seed),
        now: () => h.clock.t,
        sessionTtlMs: 60_000,
      });
      h.strategy = s;
      for (const op of ops) h.apply(s, op);
    },
  );
}

describe('rotation strategy contract', () => {
  for (const name of STRATEGIES) {
    it(`${name}: never ineligible, never excluded, null iff none usable, survives membership churn`, () => {
      Object.assign(seen, { picked: 0, none: 0, removedBetween: 0 });
      fc.assert(contractProperty(name), { numRuns: 200 });
      assert.ok(seen.picked > 1200 && seen.none > 100 && seen.removedBetween > 300, JSON.stringify(seen));
    });

    it(`${name}: an empty pool or an all-down pool gives null without throwing`, () => {
      const s = createStrategy(name, { random: seededRandom(1), now: () => 0 });
      assert.equal(s.name, name);
      assert.equal(s.select(candidates([]), {}), null);
      assert.equal(s.select(candidates([]), { sessionId: 'x', country: 'US' }), null);
      const members = [makeEntry('a', { country: 'US' }), makeEntry('b')];
      assert.equal(
        s.select(candidates(members, new Set(['a', 'b'])), { sessionId: 'x', country: 'US' }),
        null,
      );
      assert.equal(s.select(candidates(members), { exclude: new Set(['a', 'b']) }), null);
      assert.equal(s.select(candidates(members, new Set(['a'])), { exclude: new Set(['b']) }), null);
    });
  }
});

describe('selection cost on a large pool (sanity bound, not a benchmark)', () => {
  const N = 100_000;
  const SELECTIONS = 10_000;
  const members = Array.from({ length: N }, (_, i) => makeEntry(`m${i}`, { country: i % 2 ? 'US' : 'DE' }));

  for (const name of STRATEGIES.filter((n) => n !== 'weighted')) {
    it(`${name}: ${SELECTIONS} selections over ${N} members look at few members each`, () => {
      const s = createStrategy(name, { random: seededRandom(7), now: () => 0 });
      let checks = 0;
      const c = {
        members,
        eligible: () => {
          checks++;
          return true;
        },
      };
      const started = performance.now();
      for (let i = 0; i < SELECTIONS; i++) {
        const e = s.select(c, { sessionId: i % 3 === 0 ? `s${i % 50}` : undefined, country: 'US' });
        assert.ok(e);
        // Load shifts as requests start, as the request path reports it.
        e.inFlight++;
        s.inFlightChanged?.(e);
      }
      const elapsed = performance.now() - started;
      for (const e of members) e.inFlight = 0;
      // A linear scan would make N checks per selection; allow a handful.
      assert.ok(checks <= SELECTIONS * 4, `${name}: ${checks} eligibility checks`);
      assert.ok(elapsed < 1500, `${name}: ${elapsed.toFixed(0)} ms`);
    });
  }
});
