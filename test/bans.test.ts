import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { type BanTarget, startBanTarget } from './fixtures/ban-target.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { addUpstream, basic, type ListeningApp, listeningApp, viaProxy } from './helpers/forward.ts';

/*
 * Ban detection end to end: a site (host A, 127.0.0.2) refuses three of five proxies, told apart by the
 * address they leave from; host B (127.0.0.1) refuses nobody. The pair (proxy, host) cools down; the
 * proxy keeps serving host B; breakers and health never hear of it.
 */

const BANNED = ['127.0.0.11', '127.0.0.12', '127.0.0.13'];
const CLEAN = ['127.0.0.14', '127.0.0.15'];
let site: BanTarget;
let proxies: ForwardProxy[];

before(async () => {
  site = await startBanTarget(BANNED);
  proxies = await Promise.all([...BANNED, ...CLEAN].map((egress) => startForwardProxy({ egress })));
});
after(async () => {
  await Promise.all([site.close(), ...proxies.map((p) => p.close())]);
});

interface Proxied {
  status_code: number;
  proxy_id: string;
  attempts: number;
  body: string;
}

async function call(t: ListeningApp, body: Record<string, unknown>): Promise<Proxied> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/request',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  assert.equal(res.statusCode, 200, res.body);
  return (res.json() as { data: Proxied }).data;
}

async function pool(env: Record<string, string> = {}) {
  const t = await listeningApp({ ROTA_MAX_RETRIES: '5', ...env });
  const ids: string[] = [];
  for (const p of proxies) ids.push(await addUpstream(t, { url: `http://127.0.0.1:${p.port}` }));
  return { t, ids, banned: ids.slice(0, 3), clean: ids.slice(3) };
}

describe('bans on POST request', () => {
  let t: ListeningApp;
  let banned: string[];
  let clean: string[];
  before(async () => {
    ({ t, banned, clean } = await pool());
  });
  after(() => t.close());
  beforeEach(() => {
    site.mode = { kind: '403' };
  });

  test('a ban moves the call to another proxy; once cooled, host A goes only to clean proxies', async () => {
    for (let i = 0; i < 10; i++) {
      const r = await call(t, { url: site.urlA('/page') });
      assert.equal(r.status_code, 200, 'every call of host A succeeds');
      assert.ok(clean.includes(r.proxy_id));
    }
    const later: number[] = [];
    for (let i = 0; i < 20; i++) later.push((await call(t, { url: site.urlA('/page') })).attempts);
    assert.deepEqual(new Set(later), new Set([1]), 'cool-downs in place: one attempt per call');
    for (const id of banned) {
      assert.equal(t.services.breakers.state(id), 'closed', 'a ban never touches the breaker');
      assert.notEqual(t.services.pool.get(id)?.health, 'degraded');
      assert.equal(t.services.pool.get(id)?.stats.failed, 0);
    }
  });

  test('the banned proxies still serve host B', async () => {
    const used = new Set<string>();
    for (let i = 0; i < 10; i++) used.add((await call(t, { url: site.urlB('/x') })).proxy_id);
    for (const id of banned) assert.ok(used.has(id), 'other hosts keep using the proxy');
  });

  test('GET bans lists the pairs (filter by host), metrics count them, DELETE ends them', async () => {
    const list = await t.app.inject({ url: '/api/v1/bans?host=127.0.0.2' });
    const page = (
      list.json() as { data: { items: { proxy_id: string; host: string; count: number }[]; total: number } }
    ).data;
    assert.equal(page.total, 3);
    assert.deepEqual(new Set(page.items.map((i) => i.proxy_id)), new Set(banned));
    assert.ok(page.items.every((i) => i.host === '127.0.0.2' && i.count === 1));
    for (let i = 0; i < 6; i++) {
      const next = await t.app.inject({ url: '/api/v1/rotate?host=127.0.0.2' });
      assert.ok(
        !banned.includes((next.json() as { data: { id: string } }).data.id),
        'rotate?host= passes them over',
      );
    }
    const none = await t.app.inject({ url: '/api/v1/bans?host=127.0.0.1' });
    assert.equal((none.json() as { data: { total: number } }).data.total, 0);
    const metrics = (await t.app.inject({ url: '/metrics' })).body;
    assert.match(metrics, /rota_bans_total\{status="403"\} 3/);
    assert.match(metrics, /rota_proxy_cooldowns_active 3/);
    const retry = (await t.app.inject({ url: '/metrics/retry' })).json() as {
      data: { summary: { ban_events_count: number } };
    };
    assert.equal(retry.data.summary.ban_events_count, 3);
    const del = await t.app.inject({ method: 'DELETE', url: '/api/v1/bans?host=127.0.0.2' });
    assert.equal(del.statusCode, 204);
    assert.match((await t.app.inject({ url: '/metrics' })).body, /rota_proxy_cooldowns_active 0/);
  });

  test('a repeat doubles the cool-down; Retry-After is honoured when longer, up to the maximum', async () => {
    await t.app.inject({ method: 'DELETE', url: '/api/v1/bans' });
    site.mode = { kind: '429', retryAfterS: 1200 };
    for (let i = 0; i < 3; i++) await call(t, { url: site.urlA('/p') });
    const until = (id: string) => {
      const c = t.services.cooldowns.forHost('127.0.0.2')?.get(id);
      return c ? (c.until - Date.now()) / 1000 : 0;
    };
    for (const id of banned)
      assert.ok(until(id) > 1150 && until(id) <= 1200, `Retry-After honoured: ${until(id)}`);
    site.mode = { kind: '429', retryAfterS: 99_999 };
    await t.app.inject({ method: 'DELETE', url: '/api/v1/bans' });
    await call(t, { url: site.urlA('/p') });
    for (const id of banned) {
      const left = until(id);
      if (left > 0) assert.ok(left <= 3600, `capped at max_cooldown_s: ${left}`);
    }
  });

  test('a body pattern (case-insensitive) is a ban too; POST is not replayed but still cools down', async () => {
    await t.app.inject({ method: 'DELETE', url: '/api/v1/bans' });
    const put = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/ban-policy',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ body_patterns: ['solve the captcha'] }),
    });
    assert.equal(put.statusCode, 200);
    site.mode = { kind: 'captcha' };
    for (let i = 0; i < 4; i++) assert.equal((await call(t, { url: site.urlA('/c') })).status_code, 200);
    assert.equal(t.services.cooldowns.active('127.0.0.2').length, 3);
    await t.app.inject({ method: 'DELETE', url: '/api/v1/bans' });
    site.mode = { kind: '403' };
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++)
      statuses.push((await call(t, { url: site.urlA('/w'), method: 'POST' })).status_code);
    assert.ok(statuses.includes(403), 'a POST gets the site answer: it is not replayed');
    assert.equal(t.services.cooldowns.active('127.0.0.2').length, 3);
  });

  test('when every proxy cools down for a host, a new call uses the one whose cool-down ends first', async () => {
    await t.app.inject({ method: 'DELETE', url: '/api/v1/bans' });
    site.banned = new Set([...BANNED, ...CLEAN]);
    try {
      const first = await call(t, { url: site.urlA('/all') });
      assert.equal(first.status_code, 403, 'no proxy left: the caller gets the site answer');
      const soonest = [...t.services.cooldowns.active('127.0.0.2')].sort((x, y) => x.until - y.until)[0];
      const next = await call(t, { url: site.urlA('/all') });
      assert.equal(next.proxy_id, soonest?.proxyId);
      assert.equal(next.attempts, 1);
    } finally {
      site.banned = new Set(BANNED);
      await t.app.inject({ method: 'DELETE', url: '/api/v1/bans' });
    }
  });

  test('a session on a banned pair is re-pinned', async () => {
    const r1 = await call(t, { url: site.urlB('/s'), session_id: 'sess-1' });
    const r2 = await call(t, { url: site.urlA('/s'), session_id: 'sess-1' });
    assert.equal(r2.status_code, 200);
    if (banned.includes(r1.proxy_id))
      assert.notEqual(r2.proxy_id, r1.proxy_id, 're-pinned away from the ban');
    const r3 = await call(t, { url: site.urlA('/s'), session_id: 'sess-1' });
    assert.equal(r3.proxy_id, r2.proxy_id, 'and sticky again');
  });
});

describe('bans on the listener, and invalid policies', () => {
  test('an absolute-URI request through the listener is judged and failed over the same way', async () => {
    const { t, clean } = await pool();
    try {
      site.mode = { kind: '403' };
      for (let i = 0; i < 6; i++) {
        const r = await viaProxy(t.httpPort, site.urlA('/l'), {
          headers: { 'proxy-authorization': basic('l', '') },
        });
        assert.equal(r.status, 200);
        assert.ok(clean.includes(String(r.headers['x-rota-proxy-id'])));
      }
      assert.equal(t.services.cooldowns.active('127.0.0.2').length, 3);
    } finally {
      await t.close();
    }
  });

  test('invalid ban-policy values: one 400 listing every problem, nothing changed', async () => {
    const { t } = await pool();
    try {
      const before = t.services.banPolicy.get();
      const res = await t.app.inject({
        method: 'PUT',
        url: '/api/v1/ban-policy',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({
          status_codes: [200],
          body_patterns: Array.from({ length: 21 }, () => 'x'),
          cooldown_s: 0,
          max_cooldown_s: 'long',
        }),
      });
      assert.equal(res.statusCode, 400);
      const body = res.json() as { error: { code: string }; detail: { loc: string[] }[] };
      assert.equal(body.error.code, 'INVALID_CONFIGURATION');
      const fields = new Set(body.detail.map((d) => d.loc[1]));
      for (const f of ['status_codes', 'body_patterns', 'cooldown_s', 'max_cooldown_s'])
        assert.ok(fields.has(f), f);
      const long = await t.app.inject({
        method: 'PUT',
        url: '/api/v1/ban-policy',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ body_patterns: ['a'.repeat(201)], cooldown_s: 900, max_cooldown_s: 600 }),
      });
      assert.equal(long.statusCode, 400);
      assert.deepEqual(t.services.banPolicy.get(), before);
      const host = await t.app.inject({ url: '/api/v1/bans?host=bad%20host' });
      assert.equal(host.statusCode, 422, 'host filters are validated');
    } finally {
      await t.close();
    }
  });
});

describe('ROTA_PROXY_MAX_IN_FLIGHT', () => {
  test('a proxy at its cap is skipped; when all are, calls wait instead of overloading one', async () => {
    const t = await listeningApp({ ROTA_PROXY_MAX_IN_FLIGHT: '1' });
    try {
      for (const p of proxies.slice(3)) await addUpstream(t, { url: `http://127.0.0.1:${p.port}` });
      site.delayMs = 150;
      site.peak.clear();
      const results = await Promise.all(
        Array.from({ length: 8 }, () => call(t, { url: site.urlB('/slow') })),
      );
      assert.ok(results.every((r) => r.status_code === 200));
      for (const ip of CLEAN) assert.equal(site.peak.get(ip), 1, `${ip} never had two requests at once`);
    } finally {
      site.delayMs = 0;
      await t.close();
    }
  });
});
