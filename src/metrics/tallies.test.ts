import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { TallyCounter, TallyHistogram } from './tallies.ts';

describe('tallies (series kept in plain numbers, rendered when scraped)', () => {
  it('renders counters and cumulative histograms like prom-client does', async () => {
    const r = new Registry();
    const c = new TallyCounter({ name: 't_total', help: 'c' }, r);
    const h = new TallyHistogram({ name: 't_seconds', help: 'h', buckets: [0.1, 1] }, r);
    c.inc('a', { proxy_id: 'a' });
    c.inc('a', { proxy_id: 'ignored once the row exists' }, 2);
    for (const v of [0.05, 0.1, 0.5, 5]) h.observe('a', { proxy_id: 'a' }, v);
    const text = await r.metrics();
    assert.match(text, /^# TYPE t_total counter$/m);
    assert.match(text, /^t_total\{proxy_id="a"\} 3$/m);
    assert.match(text, /^# TYPE t_seconds histogram$/m);
    assert.match(text, /^t_seconds_bucket\{le="0.1",proxy_id="a"\} 2$/m, 'a bound is inclusive');
    assert.match(text, /^t_seconds_bucket\{le="1",proxy_id="a"\} 3$/m);
    assert.match(text, /^t_seconds_bucket\{le="\+Inf",proxy_id="a"\} 4$/m);
    assert.match(text, /^t_seconds_sum\{proxy_id="a"\} 5.65$/m);
    assert.match(text, /^t_seconds_count\{proxy_id="a"\} 4$/m);
    const json = await r.getMetricsAsJSON();
    assert.deepEqual(
      json.map((m) => m.name),
      ['t_total', 't_seconds'],
    );
    c.delete('a');
    h.delete('a');
    assert.doesNotMatch(await r.metrics(), /proxy_id="a"/, 'a deleted row leaves no series');
  });
});
