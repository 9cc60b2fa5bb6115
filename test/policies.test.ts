import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { BanTarget } from './fixtures/ban-target.ts';
import { type BanRig, banRig } from './helpers/ban-rig.ts';
import { proxied, proxiedOk } from './helpers/engine.ts';
import { type ListeningApp, viaProxy } from './helpers/forward.ts';
import { putPolicies, putRules } from './helpers/policies.ts';

/*
 * Each field of a policy rule doing what it says, end to end: a site on 127.0.0.2 ("host A") that can ban
 * proxies by the address they leave from, and four fixture proxies, each leaving from its own address,
 * tagged and placed in countries:
 *   p0 127.0.0.31 residential DE · p1 127.0.0.32 residential FR · p2 127.0.0.33 dc DE · p3 127.0.0.34 dc US
 */

const EGRESS = ['127.0.0.31', '127.0.0.32', '127.0.0.33', '127.0.0.34'];
const META = [
  { tags: ['residential'], country: 'DE' },
  { tags: ['residential'], country: 'FR' },
  { tags: ['dc'], country: 'DE' },
  { tags: ['dc'], country: 'US' },
];
let rig: BanRig;
let site: BanTarget;
let t: ListeningApp;
let ids: readonly string[];

before(async () => {
  rig = await banRig(EGRESS, { ROTA_MAX_RETRIES: '4', ROTA_STRATEGY: 'random' }, META);
  ({ site, t, ids } = rig);
});
after(() => rig.close());
beforeEach(async () => {
  site.banned = new Set();
  site.mode = { kind: '403' };
  site.delayMs = 0;
  site.seen.length = 0;
  site.peak.clear();
  await t.app.inject({ method: 'DELETE', url: '/api/v1/bans' });
});

async function call(body: Record<string, unknown>, status = 200) {
  const res = await proxied(t, body);
  assert.equal(res.statusCode, status, res.body);
  return res;
}
const data = (body: Record<string, unknown>) => proxiedOk(t, body);
const egressOf = (id: string) => EGRESS[ids.indexOf(id)];

describe('PUT policies validates everything and changes nothing on a problem', () => {
  test('bad patterns, a regular expression, duplicate names and unknown fields: 400 with each loc', async () => {
    await putRules(t, [{ name: 'keep', match: { hosts: ['keep.test'] } }]);
    const res = await putPolicies(t, {
      rules: [
        { name: 'a', match: { hosts: ['ok.test', '^.*\\.example\\.com$'] } },
        { name: 'a', match: { hosts: ['*'] }, host_rate_limit: '5/hour' },
        { name: 'b', match: { hosts: ['*'] }, surprise: true },
      ],
    });
    assert.equal(res.statusCode, 400, res.body);
    const body = res.json() as { error: { code: string }; detail: { loc: (string | number)[] }[] };
    assert.equal(body.error.code, 'INVALID_CONFIGURATION');
    const locs = body.detail.map((d) => d.loc.join('.'));
    assert.ok(locs.includes('body.rules.1.host_rate_limit'), locs.join(' '));
    assert.ok(
      locs.some((l) => l.startsWith('body.rules.2')),
      locs.join(' '),
    );
    const get = (await t.app.inject({ url: '/api/v1/policies' })).json() as {
      data: { rules: { name: string }[] };
    };
    assert.deepEqual(
      get.data.rules.map((r) => r.name),
      ['keep'],
      'nothing changed',
    );
    // With the schema satisfied, the cross checks: the pattern and the name used twice.
    const again = await putPolicies(t, {
      rules: [
        { name: 'a', match: { hosts: ['ok.test', '^.*\\.example\\.com$'] } },
        { name: 'a', match: { hosts: ['*'] } },
      ],
    });
    assert.equal(again.statusCode, 400);
    const crossLocs = (again.json() as { detail: { loc: (string | number)[] }[] }).detail.map((d) =>
      d.loc.join('.'),
    );
    assert.deepEqual(crossLocs.sort(), ['body.rules.0.match.hosts.1', 'body.rules.1.name']);
  });

  test('at most 200 rules', async () => {
    const rules = Array.from({ length: 201 }, (_, i) => ({ name: `r${i}`, match: { hosts: ['*'] } }));
    const res = await putPolicies(t, { rules });
    assert.equal(res.statusCode, 400);
  });
});

describe('a rule applies to the calls its match fits, the first in order', () => {
  test('proxies.tags_any / tags_none / countries choose who serves; rotate shows the rule', async () => {
    await putRules(t, [
      {
        name: 'search',
        match: { hosts: ['127.0.0.2'], paths: ['/search'] },
        proxies: { tags_any: ['residential'] },
      },
      {
        name: 'de-dc',
        match: { hosts: ['127.0.0.2'] },
        proxies: { tags_none: ['residential'], countries: ['de'] },
      },
    ]);
    for (let i = 0; i < 12; i++) {
      const r = await data({ url: site.urlA(`/search?q=${i}`) });
      assert.equal(r.policy, 'search');
      assert.ok([EGRESS[0], EGRESS[1]].includes(egressOf(r.proxy_id)));
    }
    for (let i = 0; i < 6; i++) {
      const r = await data({ url: site.urlA('/other') });
      assert.equal(r.policy, 'de-dc');
      assert.equal(egressOf(r.proxy_id), EGRESS[2]);
    }
    const other = await data({ url: site.urlB('/search') });
    assert.equal(other.policy, undefined, 'another host: no rule');
    const rotate = await t.app.inject({ url: '/api/v1/rotate?host=127.0.0.2&path=/search/x' });
    const shown = (rotate.json() as { data: { id: string; policy: string | null } }).data;
    assert.equal(shown.policy, 'search');
    assert.ok([ids[0], ids[1]].includes(shown.id));
  });

  test('strategy: the rule names its own (round-robin cycles while the global one is random)', async () => {
    await putRules(t, [{ name: 'rr', match: { hosts: ['rr.test'] }, strategy: 'round-robin' }]);
    const picks: string[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await t.app.inject({ url: '/api/v1/rotate?host=rr.test' });
      picks.push((res.json() as { data: { id: string } }).data.id);
    }
    assert.deepEqual(picks.slice(4), picks.slice(0, 4), 'a cycle');
    assert.equal(new Set(picks).size, 4);
  });

  test('ban: its status codes, body patterns and cool-down over the ban policy for its hosts', async () => {
    site.banned = new Set([EGRESS[0] as string]);
    await putRules(t, [
      {
        name: 'only-p0',
        match: { hosts: ['127.0.0.2'], paths: ['/a'] },
        proxies: { countries: ['DE'], tags_any: ['residential'] },
        ban: { status_codes: [500] },
      },
      {
        name: 'captcha',
        match: { hosts: ['127.0.0.2'] },
        ban: { body_patterns: ['solve the captcha'], cooldown_s: 40 },
      },
    ]);
    // 403 is not a ban under this rule: the site's answer comes back, nothing cools down.
    const r = await data({ url: site.urlA('/a') });
    assert.equal(r.status_code, 403);
    assert.equal(r.attempts, 1);
    assert.equal(t.services.cooldowns.size, 0);
    site.mode = { kind: 'captcha' };
    const before = Date.now();
    // The global strategy is random: call until p0 (the one the site refuses) has been asked once.
    for (let i = 0; i < 40 && t.services.cooldowns.size === 0; i++) {
      const c = await data({ url: site.urlA('/b') });
      assert.notEqual(egressOf(c.proxy_id), EGRESS[0], 'a captcha page is never the answer');
    }
    const bans = (await t.app.inject({ url: '/api/v1/bans' })).json() as {
      data: { items: { proxy_id: string; until: string }[] };
    };
    assert.equal(bans.data.items.length, 1);
    assert.equal(bans.data.items[0]?.proxy_id, ids[0]);
    const lasts = Date.parse(bans.data.items[0]?.until ?? '') - before;
    assert.ok(lasts >= 39_000 && lasts <= 42_000, `cool-down ${lasts} ms`);
    const metrics = (await t.app.inject({ url: '/metrics' })).body;
    assert.match(metrics, /rota_policy_bans_total\{rule="captcha"\} 1\b/);
  });

  test('retry: max_attempts and retry_non_idempotent', async () => {
    site.banned = new Set(EGRESS.slice(0, 3));
    await putRules(t, [
      {
        name: 'one-try',
        match: { hosts: ['127.0.0.2'], methods: ['GET'] },
        proxies: { countries: ['DE'] },
        retry: { max_attempts: 1 },
      },
      {
        name: 'posts',
        match: { hosts: ['127.0.0.2'], methods: ['POST'] },
        retry: { retry_non_idempotent: true, max_attempts: 4 },
      },
    ]);
    const r = await data({ url: site.urlA('/x') });
    assert.equal(r.attempts, 1);
    assert.equal(r.status_code, 403, 'a ban, and no second attempt');
    const p = await data({ url: site.urlA('/x'), method: 'POST', body: 'hello' });
    assert.equal(p.status_code, 200, 'the POST was retried past the banned proxies');
    assert.equal(egressOf(p.proxy_id), EGRESS[3]);
  });

  test('max_in_flight_per_proxy: no proxy carries more of the rule’s calls at once', async () => {
    site.delayMs = 150;
    await putRules(t, [
      {
        name: 'gentle',
        match: { hosts: ['127.0.0.2'] },
        proxies: { tags_any: ['dc'] },
        max_in_flight_per_proxy: 1,
      },
    ]);
    const all = await Promise.all(Array.from({ length: 6 }, () => data({ url: site.urlA('/slow') })));
    assert.ok(all.every((r) => r.status_code === 200));
    for (const e of [EGRESS[2], EGRESS[3]]) assert.equal(site.peak.get(e as string), 1, `peak of ${e}`);
  });

  test('min_interval_ms: the gaps the site saw between starts through one proxy', async () => {
    await putRules(t, [
      {
        name: 'polite',
        match: { hosts: ['127.0.0.2'] },
        proxies: { countries: ['US'] },
        min_interval_ms: 250,
      },
    ]);
    await Promise.all(Array.from({ length: 5 }, () => data({ url: site.urlA('/p') })));
    const at = site.seen.filter((s) => s.from === EGRESS[3]).map((s) => s.at);
    assert.equal(at.length, 5);
    // Starts are spaced by Rota; arrivals add their own delay, so each is held against the first: the
    // first arrival may be late by a few ms of a loaded machine, never early.
    for (let i = 1; i < at.length; i++) {
      const since = (at[i] as number) - (at[0] as number);
      assert.ok(since >= i * 250 - 60, `request ${i} arrived ${since.toFixed(1)} ms after the first`);
    }
  });

  test('min_interval_ms past the timeout: 429 HOST_RATE_LIMITED, counted for the rule', async () => {
    await putRules(t, [
      {
        name: 'slow-pace',
        match: { hosts: ['127.0.0.1'] },
        proxies: { countries: ['US'] },
        min_interval_ms: 5_000,
      },
    ]);
    await call({ url: site.urlB('/first'), timeout: 2 });
    const refused = await call({ url: site.urlB('/second'), timeout: 1 }, 429);
    assert.equal((refused.json() as { error: { code: string } }).error.code, 'HOST_RATE_LIMITED');
    assert.ok(Number(refused.headers['retry-after']) >= 4);
    const metrics = (await t.app.inject({ url: '/metrics' })).body;
    assert.match(metrics, /rota_policy_rate_limited_total\{rule="slow-pace"\} 1\b/);
  });

  test('host_rate_limit: spaced across the pool; past the timeout, 429 HOST_RATE_LIMITED with Retry-After', async () => {
    await putRules(t, [{ name: 'capped', match: { hosts: ['127.0.0.2'] }, host_rate_limit: '5/second' }]);
    const calls = Array.from({ length: 5 }, () => call({ url: site.urlA('/r'), timeout: 2 }));
    await Promise.all(calls);
    const at = site.seen.map((s) => s.at).sort((a, b) => a - b);
    assert.equal(at.length, 5);
    for (let i = 1; i < at.length; i++) {
      const since = (at[i] as number) - (at[0] as number);
      assert.ok(since >= i * 200 - 60, `request ${i} arrived ${since.toFixed(1)} ms after the first`);
    }
    // Ten more at once with a 1 s timeout: some must be refused rather than wait past it.
    const burst = await Promise.all(
      Array.from({ length: 10 }, () =>
        t.app.inject({
          method: 'POST',
          url: '/api/v1/request',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ url: site.urlA('/r'), timeout: 1 }),
        }),
      ),
    );
    const refused = burst.filter((r) => r.statusCode === 429);
    assert.ok(refused.length >= 4, `${refused.length} refused`);
    const first = refused[0];
    assert.ok(first);
    assert.equal((first.json() as { error: { code: string } }).error.code, 'HOST_RATE_LIMITED');
    assert.ok(Number(first.headers['retry-after']) >= 1);
    const metrics = (await t.app.inject({ url: '/metrics' })).body;
    assert.match(metrics, /rota_policy_rate_limited_total\{rule="capped"\} ([1-9]\d*)/);
    assert.match(metrics, /rota_policy_requests_total\{rule="capped"\} ([1-9]\d*)/);
  });

  test('the listeners apply the same rule: absolute-URI carries X-Rota-Policy and X-Rota-Attempts', async () => {
    await putRules(t, [{ name: 'fr', match: { hosts: ['127.0.0.2'] }, proxies: { countries: ['FR'] } }]);
    const a = await viaProxy(t.httpPort, site.urlA('/via'));
    assert.equal(a.status, 200);
    assert.equal(a.headers['x-rota-policy'], 'fr');
    assert.equal(a.headers['x-rota-attempts'], '1');
    assert.equal(a.headers['x-rota-proxy-id'], ids[1]);
    assert.equal(site.seen.at(-1)?.from, EGRESS[1]);
  });

  test('a rule no proxy can satisfy: 503 that names the rule, with Proxy-Status on the listener', async () => {
    await putRules(t, [
      { name: 'nobody', match: { hosts: ['127.0.0.2'] }, proxies: { tags_any: ['mobile'] } },
    ]);
    const res = await call({ url: site.urlA('/n') }, 503);
    assert.match(res.body, /nobody/);
    const a = await viaProxy(t.httpPort, site.urlA('/n'));
    assert.equal(a.status, 503);
    assert.equal(a.headers['x-rota-error'], 'PROXY_POOL_EMPTY');
    assert.equal(
      a.headers['proxy-status'],
      'rota; error=destination_unavailable; details="PROXY_POOL_EMPTY"',
    );
    await putRules(t, []);
  });
});
