import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { BreakerRegistry } from '../breaker/registry.ts';
import { Pool } from '../pool/pool.ts';
import { MemoryStore } from '../store/memory.ts';
import { AdmissibleCounts } from './admissible.ts';

/*
 * The counts answer what a scan of the pool would: under any sequence of additions, removals, failures,
 * resets and time passing, `any(country)` equals "some member of that country is admitted by its breaker".
 */

const op = fc.oneof(
  fc.record({ t: fc.constant('add' as const), country: fc.constantFrom('DE', 'US', undefined) }),
  fc.record({ t: fc.constant('remove' as const), i: fc.nat(20) }),
  fc.record({ t: fc.constant('fail' as const), i: fc.nat(20), n: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ t: fc.constant('succeed' as const), i: fc.nat(20) }),
  fc.record({ t: fc.constant('reset' as const), i: fc.nat(20) }),
  fc.record({ t: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 40_000 }) }),
);

describe('AdmissibleCounts', () => {
  it('agrees with a scan of the pool, for the whole pool and per country', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 60 }), async (ops) => {
        const clock = { t: 1_000_000 };
        const pool = new Pool(new MemoryStore(), () => clock.t);
        const breakers = new BreakerRegistry({
          settings: { failureThreshold: 2, windowS: 60, timeoutS: 30 },
          now: () => clock.t,
        });
        const counts = new AdmissibleCounts(pool, breakers);
        pool.listen({ removed: (e) => breakers.remove(e.record.id) });
        let n = 0;
        const nth = (i: number) => pool.all()[i % Math.max(1, pool.size)];
        for (const o of ops) {
          if (o.t === 'add') await pool.add({ url: `http://10.0.0.${++n}:8080`, country: o.country });
          else if (o.t === 'wait') clock.t += o.ms;
          else {
            const e = nth(o.i);
            if (e === undefined) continue;
            const id = e.record.id;
            if (o.t === 'remove') await pool.remove(id);
            else if (o.t === 'reset') breakers.reset(id);
            else
              for (let k = 0; k < (o.t === 'fail' ? o.n : 1); k++)
                breakers.admit(id)?.release(o.t === 'fail' ? 'failure' : 'success');
          }
          for (const country of [undefined, 'DE', 'US']) {
            const scan = pool
              .all()
              .some(
                (e) =>
                  (country === undefined || e.record.country === country) &&
                  breakers.isAdmissible(e.record.id),
              );
            assert.equal(counts.any(country), scan, `country ${country}`);
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('an empty pool, or none of the country: false', async () => {
    const pool = new Pool(new MemoryStore(), () => 0);
    const counts = new AdmissibleCounts(
      pool,
      new BreakerRegistry({ settings: { failureThreshold: 1, windowS: 60, timeoutS: 30 }, now: () => 0 }),
    );
    assert.equal(counts.any(), false);
    await pool.add({ url: 'http://10.0.0.1:8080', country: 'DE' });
    assert.equal(counts.any(), true);
    assert.equal(counts.any('US'), false);
  });
});
