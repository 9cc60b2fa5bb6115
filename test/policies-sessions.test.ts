import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { BanTarget } from './fixtures/ban-target.ts';
import { type BanRig, banRig } from './helpers/ban-rig.ts';
import { basic, type ListeningApp, viaProxy } from './helpers/forward.ts';
import { putRules } from './helpers/policies.ts';

/*
 * Sessions the client controls, through the HTTP listener (`-session-ID` in the proxy username) and the
 * API: per-rule terms (scope, on_ban, max_requests, idle_ttl_s), the sessions API, and the answer's
 * X-Rota-Session / X-Rota-Attempts. A site on 127.0.0.2 ("host A") bans by egress address; 127.0.0.1
 * ("host B") bans nobody; three proxies leave from 127.0.0.41-43.
 */

const EGRESS = ['127.0.0.41', '127.0.0.42', '127.0.0.43'];
let rig: BanRig;
let site: BanTarget;
let t: ListeningApp;
let ids: readonly string[];

before(async () => {
  rig = await banRig(EGRESS, { ROTA_MAX_RETRIES: '3' });
  ({ site, t, ids } = rig);
});
after(() => rig.close());
beforeEach(async () => {
  site.banned = new Set();
  site.mode = { kind: '403' };
  await t.app.inject({ method: 'DELETE', url: '/api/v1/bans' });
});

/** A GET through the listener with session `sid`: the status, the proxy, and Rota's headers. */
async function get(url: string, sid: string) {
  const a = await viaProxy(t.httpPort, url, {
    headers: { 'proxy-authorization': basic(`crawl-session-${sid}`, 'x') },
  });
  return {
    status: a.status,
    proxy: String(a.headers['x-rota-proxy-id']),
    session: a.headers['x-rota-session'],
    attempts: Number(a.headers['x-rota-attempts']),
    policy: a.headers['x-rota-policy'],
  };
}
const egressOf = (id: string) => EGRESS[ids.indexOf(id)] as string;

describe('session terms per rule', () => {
  test('GET rotate keys a session as the call would: a scope: host pin is the one the next call to that host uses', async () => {
    await putRules(t, [{ name: 'per-host', match: { hosts: ['*'] }, session: { scope: 'host' } }]);
    const first = await get(site.urlB('/'), 'rot');
    const rotate = await t.app.inject({ url: '/api/v1/rotate?host=127.0.0.1&session_id=rot' });
    assert.equal(rotate.statusCode, 200, rotate.body);
    const shown = rotate.json() as { data: { id: string; policy: string } };
    assert.deepEqual(
      [shown.data.id, shown.data.policy],
      [first.proxy, 'per-host'],
      'the host’s pin, not a new one',
    );
    assert.equal((await get(site.urlB('/'), 'rot')).proxy, first.proxy);
    await putRules(t, []);
  });

  test('scope: host pins per site, so a ban on one site re-pins only that site', async () => {
    await putRules(t, [{ name: 'per-host', match: { hosts: ['*'] }, session: { scope: 'host' } }]);
    const a1 = await get(site.urlA('/'), 'hs');
    const b1 = await get(site.urlB('/'), 'hs');
    assert.equal(a1.session, 'hs');
    assert.equal(a1.policy, 'per-host');
    site.banned = new Set([egressOf(a1.proxy)]);
    const a2 = await get(site.urlA('/'), 'hs');
    assert.equal(a2.status, 200);
    assert.notEqual(a2.proxy, a1.proxy, 'host A moved');
    assert.equal(a2.attempts, 2, 'the ban, then another proxy');
    for (let i = 0; i < 3; i++) {
      assert.equal((await get(site.urlA('/'), 'hs')).proxy, a2.proxy, 'and stays on its new pin');
      assert.equal((await get(site.urlB('/'), 'hs')).proxy, b1.proxy, 'host B never moved');
    }
    const listed = await t.app.inject({ url: '/api/v1/sessions' });
    const items = (
      listed.json() as {
        data: { items: { id: string; host: string | null; proxy_id: string; requests: number }[] };
      }
    ).data.items.filter((s) => s.id === 'hs');
    assert.deepEqual(items.map((s) => s.host).sort(), ['127.0.0.1', '127.0.0.2']);
    assert.equal(items.find((s) => s.host === '127.0.0.1')?.proxy_id, b1.proxy);
  });

  test('scope: all (the default) — a ban on one site moves the one pin every site shares', async () => {
    await putRules(t, []);
    const a1 = await get(site.urlA('/'), 'as');
    assert.equal((await get(site.urlB('/'), 'as')).proxy, a1.proxy, 'one pin for both sites');
    site.banned = new Set([egressOf(a1.proxy)]);
    const a2 = await get(site.urlA('/'), 'as');
    assert.notEqual(a2.proxy, a1.proxy);
    assert.equal((await get(site.urlB('/'), 'as')).proxy, a2.proxy, 'host B followed');
  });

  test('on_ban: keep — the address stays and the ban is handed back', async () => {
    await putRules(t, [{ name: 'login', match: { hosts: ['127.0.0.2'] }, session: { on_ban: 'keep' } }]);
    const first = await get(site.urlA('/login'), 'ks');
    site.banned = new Set([egressOf(first.proxy)]);
    const banned = await get(site.urlA('/login'), 'ks');
    assert.equal(banned.status, 403, 'the ban is the answer');
    assert.equal(banned.proxy, first.proxy);
    assert.equal(banned.attempts, 1);
    assert.equal(t.services.cooldowns.size, 1, 'the ban was still recorded');
    const again = await get(site.urlA('/login'), 'ks');
    assert.equal(again.proxy, first.proxy, 'kept through the cool-down');
  });

  test('max_requests: rotates every N requests', async () => {
    await putRules(t, [{ name: 'rotate2', match: { hosts: ['127.0.0.1'] }, session: { max_requests: 2 } }]);
    const seen: string[] = [];
    for (let i = 0; i < 6; i++) seen.push((await get(site.urlB('/r'), 'mr')).proxy);
    assert.equal(seen[0], seen[1]);
    assert.equal(seen[2], seen[3]);
    assert.equal(seen[4], seen[5]);
    assert.notEqual(seen[2], seen[1]);
    assert.notEqual(seen[4], seen[3]);
  });

  test('idle_ttl_s: an idle session is forgotten; the sessions API lists and ends sessions', async () => {
    await putRules(t, [{ name: 'short', match: { hosts: ['127.0.0.1'] }, session: { idle_ttl_s: 1 } }]);
    await get(site.urlB('/'), 'idle');
    const listed = async () =>
      (
        (await t.app.inject({ url: '/api/v1/sessions?page_size=100' })).json() as {
          data: { items: { id: string }[] };
        }
      ).data.items.map((s) => s.id);
    assert.ok((await listed()).includes('idle'));
    await new Promise((r) => setTimeout(r, 1100));
    assert.ok(!(await listed()).includes('idle'), 'forgotten after 1 s idle');
    await get(site.urlB('/'), 'ending');
    assert.equal((await t.app.inject({ method: 'DELETE', url: '/api/v1/sessions/ending' })).statusCode, 204);
    assert.ok(!(await listed()).includes('ending'));
    const gone = await t.app.inject({ method: 'DELETE', url: '/api/v1/sessions/ending' });
    assert.equal(gone.statusCode, 404);
    assert.equal((gone.json() as { error: { code: string } }).error.code, 'SESSION_NOT_FOUND');
  });

  test('min_interval_ms with a session: the call waits for its pinned proxy rather than moving', async () => {
    await putRules(t, [{ name: 'paced', match: { hosts: ['127.0.0.1'] }, min_interval_ms: 300 }]);
    const first = await get(site.urlB('/p'), 'paced');
    const rest = await Promise.all([1, 2, 3].map(() => get(site.urlB('/p'), 'paced')));
    assert.deepEqual(
      rest.map((r) => r.proxy),
      [first.proxy, first.proxy, first.proxy],
      'every call on the pinned proxy',
    );
    const at = site.seen.filter((s) => s.path === '/p').map((s) => s.at);
    for (let i = 1; i < at.length; i++) {
      const since = (at[i] as number) - (at[0] as number);
      assert.ok(since >= i * 300 - 60, `request ${i} ${since.toFixed(1)} ms after the first`);
    }
  });

  test('a session id as long as POST request takes (256) can be ended', async () => {
    const long = `s${'x'.repeat(255)}`;
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/request',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ url: site.urlB('/long'), session_id: long }),
    });
    assert.equal(res.statusCode, 200, res.body);
    const del = await t.app.inject({ method: 'DELETE', url: `/api/v1/sessions/${long}` });
    assert.equal(del.statusCode, 204, del.body);
  });

  test('POST request reports the session and the rule in its data', async () => {
    await putRules(t, [{ name: 'api', match: { hosts: ['127.0.0.1'] } }]);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/request',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ url: site.urlB('/x'), session_id: 'api-s' }),
    });
    const d = (res.json() as { data: { session_id: string; policy: string; attempts: number } }).data;
    assert.equal(d.session_id, 'api-s');
    assert.equal(d.policy, 'api');
    assert.equal(d.attempts, 1);
  });
});

describe('POST bans: a ban the client saw', () => {
  test('cools the pair down like a ban Rota saw, doubling on repeat, bounded by max_cooldown_s', async () => {
    const report = (body: Record<string, unknown>) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/bans',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
    const t0 = Date.now();
    const first = await report({ proxy_id: ids[0], host: '127.0.0.2', cooldown_s: 60 });
    assert.equal(first.statusCode, 201, first.body);
    const d1 = (first.json() as { data: { until: string; count: number } }).data;
    assert.equal(d1.count, 1);
    assert.ok(Math.abs(Date.parse(d1.until) - t0 - 60_000) < 2_000);
    const second = (await report({ proxy_id: ids[0], host: '127.0.0.2', cooldown_s: 60 })).json() as {
      data: { until: string; count: number };
    };
    assert.equal(second.data.count, 2);
    assert.ok(Date.parse(second.data.until) - t0 >= 119_000, 'doubled');
    const capped = (await report({ proxy_id: ids[1], host: 'x.test', cooldown_s: 600_000 })).json() as {
      data: { until: string };
    };
    assert.ok(Date.parse(capped.data.until) - t0 <= 3_600_000 + 2_000, 'at most the ban policy max');
    // The reported proxy is passed over for that host.
    for (let i = 0; i < 6; i++) assert.notEqual((await get(site.urlA('/'), `b${i}`)).proxy, ids[0]);
    assert.equal(
      (await report({ proxy_id: '00000000-0000-4000-8000-000000000000', host: 'a.test' })).statusCode,
      404,
    );
    assert.equal((await report({ proxy_id: ids[0], host: 'bad host' })).statusCode, 422);
    const audited = t.logs.filter((l) => l.includes('"action":"bans.report"'));
    assert.ok(audited.length >= 3, 'each report is audit-logged');
  });
});
