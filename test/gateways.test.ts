import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { type BanTarget, startBanTarget } from './fixtures/ban-target.ts';
import { type ProviderGateway, startProviderGateway } from './fixtures/provider-gateway.ts';
import { proxied, proxiedOk } from './helpers/engine.ts';
import {
  addUpstream,
  basic,
  connectVia,
  getOverTunnel,
  type ListeningApp,
  listeningApp,
  socks5,
  viaProxy,
} from './helpers/forward.ts';
import { putRules } from './helpers/policies.ts';
import { freePort } from './helpers/real-proxies.ts';

/*
 * A provider gateway as one pool entry: a fixture gateway on loopback leaves from the egress address the
 * session in its username picks (127.0.0.81-84), so a test sees exits stay and change. A site on
 * 127.0.0.2 bans by egress address.
 */

const EGRESSES = ['127.0.0.81', '127.0.0.82', '127.0.0.83', '127.0.0.84'];
let site: BanTarget;
let gw: ProviderGateway;
let t: ListeningApp;
let id: string;

before(async () => {
  site = await startBanTarget([]);
  gw = await startProviderGateway({ customer: 'acme', password: 'gw-secret', egresses: EGRESSES });
  t = await listeningApp({ ROTA_MAX_RETRIES: '4' });
  id = await addUpstream(t, {
    url: `http://127.0.0.1:${gw.port}`,
    username_template: 'customer-acme-session-{session}-country-{country}',
    password: 'gw-secret',
    country: 'DE',
  });
});
after(async () => {
  await t.close();
  await Promise.all([site.close(), gw.close()]);
});
beforeEach(async () => {
  site.banned = new Set();
  site.mode = { kind: '403' };
  await t.app.inject({ method: 'DELETE', url: '/api/v1/bans' });
});

const api = (body: Record<string, unknown>) => proxiedOk(t, body);
const lastExit = () => gw.seen.at(-1);

describe('a provider gateway', () => {
  test('a session keeps one provider session, hence one exit; no session is a new exit per request', async () => {
    for (let i = 0; i < 4; i++) {
      const r = await api({ url: site.urlB('/s'), session_id: 'keep1' });
      assert.equal(r.proxy_id, id);
    }
    const kept = gw.seen.slice(-4);
    assert.equal(new Set(kept.map((s) => s.session)).size, 1, 'one provider session');
    assert.equal(new Set(kept.map((s) => s.egress)).size, 1, 'one exit');
    assert.equal(kept[0]?.country, 'de', '{country}: the entry’s country, lower case');
    for (let i = 0; i < 6; i++) await api({ url: site.urlB('/n') });
    const fresh = gw.seen.slice(-6).map((s) => s.session);
    assert.equal(new Set(fresh).size, 6, 'a provider session per request');
  });

  test('{country} is the call’s country when it names one', async () => {
    await api({ url: site.urlB('/c'), country: 'fr' });
    assert.equal(lastExit()?.country, 'fr');
    const a = await viaProxy(t.httpPort, site.urlB('/c'), {
      headers: { 'proxy-authorization': basic('crawler-country-jp', 'x') },
    });
    assert.equal(a.status, 200, 'a -country- filter passes a gateway that renders the country');
    assert.equal(lastExit()?.country, 'jp');
  });

  test('a rule allowing some countries takes a gateway that renders {country}, which renders one of them', async () => {
    await putRules(t, [{ name: 'fr', match: { hosts: ['127.0.0.1'] }, proxies: { countries: ['FR'] } }]);
    try {
      const r = await api({ url: site.urlB('/geo') });
      assert.equal(r.proxy_id, id, 'the DE gateway serves FR');
      assert.equal(lastExit()?.country, 'fr', 'the rule’s country, not the entry’s');
      await api({ url: site.urlB('/geo'), country: 'fr' });
      assert.equal(lastExit()?.country, 'fr');
      // A listener asking for a country the rule does not allow: not through the gateway either.
      const seen = gw.seen.length;
      const jp = await viaProxy(t.httpPort, site.urlB('/geo'), {
        headers: { 'proxy-authorization': basic('crawler-country-jp', 'x') },
      });
      assert.equal(jp.status, 503);
      assert.equal(gw.seen.length, seen, 'the gateway was not asked for JP');
    } finally {
      await putRules(t, []);
    }
  });

  test('one session has one exit on every door: API, absolute-URI, CONNECT, SOCKS5', async () => {
    const auth = { 'proxy-authorization': basic('crawler-session-doors', 'x') };
    await api({ url: site.urlB('/api'), session_id: 'doors' });
    const exit = lastExit()?.egress;
    assert.equal(site.seen.at(-1)?.from, exit, 'the site saw the gateway’s exit');
    const a = await viaProxy(t.httpPort, site.urlB('/abs'), { headers: auth });
    assert.equal(a.status, 200);
    assert.equal(a.headers['x-rota-proxy-id'], id);
    assert.equal(site.seen.at(-1)?.from, exit);
    const tun = await connectVia(t.httpPort, `127.0.0.1:${site.portB}`, auth);
    assert.equal(tun.status, 200);
    assert.match(await getOverTunnel(tun.socket, `127.0.0.1:${site.portB}`, '/tunnel'), /^HTTP\/1\.1 200/);
    assert.equal(site.seen.at(-1)?.from, exit);
    const s = await socks5(t.socksPort, {
      username: 'crawler-session-doors',
      password: 'x',
      port: site.portB,
    });
    assert.equal(s.reply, 0);
    assert.match(await getOverTunnel(s.socket, `127.0.0.1:${site.portB}`, '/socks'), /^HTTP\/1\.1 200/);
    assert.equal(site.seen.at(-1)?.from, exit);
  });

  test('a ban moves the session to a new provider session, not to another proxy, and it stays there', async () => {
    await api({ url: site.urlA('/b'), session_id: 'banme' });
    const first = lastExit();
    assert.ok(first);
    site.banned = new Set([first.egress]);
    // The next provider session may land on the banned exit again (the provider chooses): then another.
    const r = await api({ url: site.urlA('/b'), session_id: 'banme' });
    assert.equal(r.status_code, 200);
    assert.equal(r.proxy_id, id, 'the same pool entry');
    assert.ok(r.attempts >= 2);
    const moved = lastExit();
    assert.ok(moved && moved.session !== first.session && moved.egress !== first.egress);
    for (let i = 0; i < 3; i++) {
      const again = await api({ url: site.urlA('/b'), session_id: 'banme' });
      assert.equal(again.attempts, 1);
      assert.equal(lastExit()?.session, moved.session, 'the session stays on its new provider session');
    }
    // The cool-down is the exit's, shown with the gateway's id and a digest, never the session itself.
    const bans = (await t.app.inject({ url: '/api/v1/bans' })).json() as {
      data: { items: { proxy_id: string; exit?: string }[] };
    };
    assert.ok(bans.data.items.length >= 1);
    for (const b of bans.data.items) {
      assert.equal(b.proxy_id, id);
      assert.match(b.exit ?? '', /^[0-9a-f]{12}$/);
    }
    assert.doesNotMatch(JSON.stringify(bans), new RegExp(first.session ?? 'none'));
    assert.equal(t.services.breakers.state(id), 'closed', 'a ban is never the gateway’s fault');
  });

  test('a banned answer to a call that cannot be sent again is handed back; the session’s next call has a new exit', async () => {
    await api({ url: site.urlA('/post'), session_id: 'post1' });
    const first = lastExit();
    assert.ok(first);
    site.banned = new Set([first.egress]);
    const posted = await api({ url: site.urlA('/post'), method: 'POST', body: 'x', session_id: 'post1' });
    assert.deepEqual([posted.status_code, posted.attempts], [403, 1], 'a POST is sent once');
    const next = await api({ url: site.urlA('/post'), session_id: 'post1' });
    assert.deepEqual([next.status_code, next.attempts], [200, 1], 'straight to a new exit');
    assert.notEqual(lastExit()?.session, first.session, 'a new provider session');
    assert.notEqual(lastExit()?.egress, first.egress);
  });

  test('a session pinned anew (max_requests) or ended (DELETE sessions) gets a new provider session', async () => {
    await putRules(t, [{ name: 'every2', match: { hosts: ['*'] }, session: { max_requests: 2 } }]);
    try {
      const seen: string[] = [];
      for (let i = 0; i < 6; i++) {
        await api({ url: site.urlB('/n'), session_id: 'every2' });
        seen.push(lastExit()?.session ?? '');
      }
      assert.deepEqual(
        [seen[0] === seen[1], seen[2] === seen[3], seen[4] === seen[5]],
        [true, true, true],
        'two requests each',
      );
      assert.equal(new Set(seen).size, 3, 'rotated every two requests');
    } finally {
      await putRules(t, []);
    }
    await api({ url: site.urlB('/d'), session_id: 'ended' });
    const before = lastExit()?.session;
    const del = await t.app.inject({ method: 'DELETE', url: '/api/v1/sessions/ended' });
    assert.equal(del.statusCode, 204);
    await api({ url: site.urlB('/d'), session_id: 'ended' });
    assert.notEqual(lastExit()?.session, before, 'ended: the next call is a new provider session');
  });

  test('a target one exit could not reach cools that provider session, never the gateway for other sessions', async () => {
    const closed = await freePort();
    const target = `127.0.0.1:${closed}`;
    const tun = await connectVia(t.httpPort, target, {
      'proxy-authorization': basic('crawler-session-unreach', 'x'),
    });
    assert.notEqual(tun.status, 200, 'the gateway could not reach it');
    tun.socket.destroy();
    const cooling = [...(t.services.refusals.table.forHost(target)?.keys() ?? [])];
    assert.ok(cooling.length >= 1);
    for (const key of cooling) assert.match(key, new RegExp(`^${id}#[0-9a-f]{16}$`), 'a provider session');
    assert.ok(!cooling.includes(id), 'not the gateway');
    // Another session still gets the gateway for that target (it is not cooling for anyone else).
    const again = await connectVia(t.httpPort, target, {
      'proxy-authorization': basic('crawler-session-other', 'x'),
    });
    again.socket.destroy();
    assert.doesNotMatch(again.head, /PROXY_POOL_EMPTY/, 'the gateway was tried');
    assert.match(again.head, /X-Rota-Error: TARGET_UNREACHABLE/i);
  });

  test('a ban the client reports through a gateway cools the session’s provider session, never the gateway', async () => {
    await api({ url: site.urlA('/r'), session_id: 'told' });
    const seen = lastExit();
    assert.ok(seen);
    const report = (body: Record<string, unknown>) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/bans',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ proxy_id: id, host: '127.0.0.2', ...body }),
      });
    const without = await report({});
    assert.equal(without.statusCode, 422, 'no session: no exit to name');
    assert.match(without.body, /session_id/);
    const told = await report({ session_id: 'told' });
    assert.equal(told.statusCode, 201, told.body);
    const bans = (await t.app.inject({ url: '/api/v1/bans?host=127.0.0.2' })).json() as {
      data: { items: { proxy_id: string; exit?: string }[] };
    };
    assert.equal(bans.data.items.length, 1);
    assert.match(
      bans.data.items[0]?.exit ?? '',
      /^[0-9a-f]{12}$/,
      'a provider session’s exit, shown by digest',
    );
    assert.equal(
      t.services.cooldowns.forHost('127.0.0.2')?.has(id),
      false,
      'the gateway itself is not cooling',
    );
    const host = (await t.app.inject({ url: '/api/v1/hosts/127.0.0.2' })).json() as {
      data: { proxies: { proxy_id: string; cooling_until: number | null }[] };
    };
    const row = host.data.proxies.find((p) => p.proxy_id === id);
    assert.ok(row);
    assert.equal(row.cooling_until, null, 'GET hosts/{host} does not show the gateway cooling');
    const next = await api({ url: site.urlA('/r'), session_id: 'told' });
    assert.equal(next.attempts, 1);
    assert.notEqual(lastExit()?.session, seen.session, 'the session moved to the next provider session');
    assert.equal((await api({ url: site.urlA('/r'), session_id: 'someone-else' })).proxy_id, id);
  });

  test('one session’s failed attempt moves that session’s exit only, never the other sessions’ on the gateway', async () => {
    await api({ url: site.urlB('/f'), session_id: 'calm' });
    const calm = lastExit()?.session;
    await api({ url: site.urlB('/f'), session_id: 'unlucky' });
    const before = lastExit()?.session;
    site.delayMs = 1_500;
    try {
      const slow = await proxied(t, { url: site.urlB('/slow'), session_id: 'unlucky', timeout: 1 });
      assert.equal(slow.statusCode, 504, slow.body);
    } finally {
      site.delayMs = 0;
    }
    await api({ url: site.urlB('/f'), session_id: 'unlucky' });
    assert.notEqual(lastExit()?.session, before, 'the session whose attempt failed moved on');
    await api({ url: site.urlB('/f'), session_id: 'calm' });
    assert.equal(lastExit()?.session, calm, 'another session kept its exit');
  });

  test('without a session a ban is seen and cools nothing (its one-use exit key would never be met again)', async () => {
    site.banned = new Set([EGRESSES[0] as string]);
    const seenBefore = site.seen.length;
    // The provider picks a random exit per request: call until one attempt was refused.
    for (let i = 0; i < 40 && !site.seen.slice(seenBefore).some((s) => s.banned); i++) {
      await api({ url: site.urlA('/fresh') });
    }
    assert.ok(
      site.seen.slice(seenBefore).some((s) => s.banned),
      'a ban was seen',
    );
    const bans = (await t.app.inject({ url: '/api/v1/bans' })).json() as { data: { total: number } };
    assert.equal(bans.data.total, 0);
  });

  test('the rendered username is never shown: API, logs, health check through a fresh session', async () => {
    const view = await t.app.inject({ url: `/api/v1/proxies/${id}` });
    // Its label is the template's words before the session (pool/label.ts); never a rendered one.
    assert.equal((view.json() as { data: { display_label: string } }).data.display_label, 'customer-acme');
    assert.doesNotMatch(view.body, /gw-secret|\{session\}|session-[0-9a-f]{16}/);
    const check = await t.app.inject({
      method: 'POST',
      url: '/api/v1/proxies/health-check',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ proxy_ids: [id] }),
    });
    assert.equal(check.statusCode, 200, check.body);
    const rendered = gw.seen.map((s) => s.session).filter((s) => s !== null);
    for (const line of t.logs) {
      for (const s of rendered)
        assert.ok(!line.includes(`session-${s}`), 'a rendered username in a log line');
      assert.ok(!line.includes('gw-secret'));
    }
  });
});
