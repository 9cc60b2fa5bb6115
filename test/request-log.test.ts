import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import { after, before, describe, test } from 'node:test';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import type { RequestRecordT, RequestsPageT } from '../src/schemas/requests.ts';
import { type BanTarget, startBanTarget } from './fixtures/ban-target.ts';
import { type TlsMaterial, testTls } from './fixtures/certs.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { listen, SocketTracker, stop } from './fixtures/server.ts';
import {
  addUpstream,
  basic,
  connectVia,
  getOverTunnel,
  type ListeningApp,
  listeningApp,
  socks5,
  viaProxy,
  waitFor,
} from './helpers/forward.ts';
import { curl } from './helpers/forward-clients.ts';
import { HAR_12_SCHEMA } from './helpers/har-schema.ts';
import { makeLoggedApp } from './helpers/logged-app.ts';

/*
 * The request log end to end: one record per call on every door (POST request, absolute-URI, CONNECT,
 * SOCKS5, an inspected HTTPS request), a failover and a ban with their attempts in order, the live
 * stream to two clients, HAR 1.2 checked against its schema, and no secret or query value anywhere.
 */

const SECRET_QUERY = 'tok3n-Qu3ry-S3cret';
const PROXY_PASSWORD = 'Upstr3am-Pa55word';
const CLIENT_PASSWORD = 'Cl13nt-Pa55word';
const BANNED_EGRESS = '127.0.0.41';
let site: BanTarget;
let bannedProxy: ForwardProxy;
let cleanProxy: ForwardProxy;
let material: TlsMaterial;
let tlsSite: { port: number; close(): Promise<void> };
let t: ListeningApp;
let ids: { banned: string; clean: string; dead: string };
let apiPort: number;

before(async () => {
  material = await testTls();
  [site, bannedProxy, cleanProxy] = await Promise.all([
    startBanTarget([BANNED_EGRESS]),
    startForwardProxy({ egress: BANNED_EGRESS }),
    startForwardProxy({ egress: '127.0.0.42', auth: { username: 'acct-1', password: PROXY_PASSWORD } }),
  ]);
  const server = https.createServer({ key: material.key, cert: material.cert }, (req, res) => {
    req.resume();
    res.end(`tls:${req.url}`);
  });
  const tracker = new SocketTracker(server);
  tlsSite = { port: await listen(server), close: () => stop(server, tracker) };
  t = await listeningApp({ ROTA_MAX_RETRIES: '5' }, { upstreamTls: { ca: material.ca } });
  ids = {
    banned: await addUpstream(t, { url: `http://127.0.0.1:${bannedProxy.port}` }),
    clean: await addUpstream(t, {
      url: `http://127.0.0.1:${cleanProxy.port}`,
      username: 'acct-1',
      password: PROXY_PASSWORD,
    }),
    // A closed port: every attempt through it is a proxy fault.
    dead: await addUpstream(t, { url: 'http://127.0.0.1:1' }),
  };
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  apiPort = (t.app.server.address() as { port: number }).port;
});

after(async () => {
  await t.close();
  await Promise.all([site.close(), bannedProxy.close(), cleanProxy.close(), tlsSite.close()]);
});

async function records(query = ''): Promise<RequestsPageT> {
  const res = await t.app.inject({ url: `/api/v1/requests?page_size=1000${query}` });
  assert.equal(res.statusCode, 200, res.body);
  assert.doesNotMatch(res.body, new RegExp(`${SECRET_QUERY}|${PROXY_PASSWORD}|${CLIENT_PASSWORD}`));
  return (res.json() as { data: RequestsPageT }).data;
}

/** Calls until a record of `door` matches `want`, or fails after `tries`. */
async function until(
  door: string,
  call: () => Promise<unknown>,
  want: (r: RequestRecordT) => boolean,
  tries = 12,
): Promise<RequestRecordT> {
  for (let i = 0; i < tries; i++) {
    await call();
    let found: RequestRecordT | undefined;
    await waitFor(async () => {
      const page = await records(`&door=${door}`);
      found = page.items.find((r) => !r.open && want(r));
      return found !== undefined || page.items.every((r) => !r.open);
    });
    if (found) return found;
  }
  throw new Error(`no ${door} record as wanted`);
}

const attemptsOf = (r: RequestRecordT) => r.attempts.map((a) => [a.proxy_id, a.outcome, a.kind, a.status]);

describe('the request log', () => {
  test('POST request: a ban then a clean proxy, attempts in order, path without its query', async () => {
    const r = await until(
      'api',
      () =>
        t.app.inject({
          method: 'POST',
          url: '/api/v1/request',
          payload: { url: site.urlA(`/page?token=${SECRET_QUERY}`), session_id: 's-api-1' },
        }),
      (x) => x.ban_seen && x.attempts.length >= 2,
      20,
    );
    assert.equal(r.method, 'GET');
    assert.equal(r.scheme, 'http');
    assert.equal(r.host, '127.0.0.2');
    assert.equal(r.path, '/page');
    assert.equal(r.session_id, 's-api-1');
    assert.equal(r.outcome, 'success');
    assert.equal(r.status, 200);
    const banAt = r.attempts.findIndex((a) => a.kind === 'banned');
    assert.deepEqual(attemptsOf(r)[banAt], [ids.banned, 'target_error', 'banned', 403]);
    assert.deepEqual(attemptsOf(r).at(-1), [ids.clean, 'success', null, 200]);
    assert.deepEqual(
      r.attempts.map((a) => a.attempt),
      r.attempts.map((_, i) => i + 1),
      'by attempt number',
    );
    assert.ok(r.bytes_down > 0 && r.duration_ms !== null);
  });

  test('absolute-URI: a failover from a dead proxy, the body bytes, no credential of the client', async () => {
    const r = await until(
      'http',
      () =>
        viaProxy(t.httpPort, site.urlB(`/fail?q=${SECRET_QUERY}`), {
          headers: { 'proxy-authorization': basic('client', CLIENT_PASSWORD) },
        }),
      (x) => x.attempts[0]?.proxy_id === ids.dead && x.attempts.length >= 2,
      30,
    );
    assert.deepEqual(attemptsOf(r)[0], [ids.dead, 'proxy_error', r.attempts[0]?.kind, null]);
    assert.equal(r.attempts.at(-1)?.outcome, 'success');
    assert.equal(r.path, '/fail');
    assert.equal(r.outcome, 'success');
    assert.ok(r.bytes_down > 0, 'the body streamed to the client is counted');
    const label = r.attempts.at(-1)?.proxy_label ?? '';
    assert.ok(label.startsWith('http://127.0.0.1:'), label);
  });

  test('CONNECT and SOCKS5: one record per tunnel with its bytes and duration', async () => {
    const c = await until(
      'connect',
      async () => {
        const tunnel = await connectVia(t.httpPort, `127.0.0.1:${site.portB}`);
        assert.equal(tunnel.status, 200);
        await getOverTunnel(tunnel.socket, '127.0.0.1', `/t?x=${SECRET_QUERY}`);
      },
      (x) => x.outcome === 'success',
    );
    assert.equal(c.method, 'CONNECT');
    assert.equal(c.path, null);
    assert.equal(c.scheme, null);
    assert.equal(c.port, site.portB);
    assert.ok(c.bytes_up > 0 && c.bytes_down > 0 && c.duration_ms !== null);
    const s = await until(
      'socks5',
      async () => {
        const r = await socks5(t.socksPort, { host: '127.0.0.1', port: site.portB });
        assert.equal(r.reply, 0);
        await getOverTunnel(r.socket, '127.0.0.1', '/s');
      },
      (x) => x.outcome === 'success',
    );
    assert.equal(s.method, 'CONNECT');
    assert.ok(s.bytes_up > 0 && s.bytes_down > 0);
  });

  test('an inspected HTTPS request: one record per inner request, scheme https', async () => {
    const ca = await t.services.inspection.authority.caPem();
    const r = await until(
      'inspect',
      async () => {
        const res = await curl(`https://127.0.0.1:${tlsSite.port}/inner?k=${SECRET_QUERY}`, {
          proxy: `http://127.0.0.1:${t.httpPort}`,
          proxyUser: 'scraper-inspect-on:',
          ca,
        });
        assert.equal(res.status, 200, res.stderr);
      },
      (x) => x.outcome === 'success',
    );
    assert.equal(r.scheme, 'https');
    assert.equal(r.host, '127.0.0.1');
    assert.equal(r.port, tlsSite.port);
    assert.equal(r.path, '/inner');
    assert.equal(r.status, 200);
  });

  test('filters, paging, newest first', async () => {
    const all = await records();
    assert.ok(all.total >= 4);
    assert.equal(all.capacity, 10_000);
    const times = all.items.map((r) => r.id);
    assert.deepEqual(
      [...times].sort((a, b) => b - a),
      times,
      'newest first',
    );
    const onlyHost = await records('&host=127.0.0.2');
    assert.ok(onlyHost.items.length > 0 && onlyHost.items.every((r) => r.host === '127.0.0.2'));
    const dead = await records(`&proxy_id=${ids.dead}`);
    assert.ok(dead.items.every((r) => r.attempts.some((a) => a.proxy_id === ids.dead)));
    const page2 = await t.app.inject({ url: '/api/v1/requests?page=2&page_size=1' });
    assert.equal((page2.json() as { data: RequestsPageT }).data.items[0]?.id, times[1]);
    const future = await records(`&since=${Date.now() + 60_000}`);
    assert.equal(future.total, 0);
  });

  test('hosts: the banning site with its bans apart from failures, the banned proxy cooling down for it', async () => {
    const list = (await t.app.inject({ url: '/api/v1/hosts' })).json() as {
      data: { items: { host: string; cooling_down: number; last_1h: { bans: number; requests: number } }[] };
    };
    const a = list.data.items.find((h) => h.host === '127.0.0.2');
    assert.ok(a && a.last_1h.bans >= 1 && a.cooling_down >= 1, JSON.stringify(a));
    const res = await t.app.inject({ url: '/api/v1/hosts/127.0.0.2' });
    assert.equal(res.statusCode, 200, res.body);
    type Figures = { bans: number; failures: number; success_rate: number | null };
    const detail = (
      res.json() as {
        data: { proxies: { proxy_id: string; last_1h: Figures; cooling_until: number | null }[] };
      }
    ).data;
    const banned = detail.proxies.find((p) => p.proxy_id === ids.banned);
    assert.ok(banned && banned.last_1h.bans >= 1, JSON.stringify(detail));
    assert.equal(banned.last_1h.failures, 0, 'a ban is not the proxy’s fault');
    assert.equal(banned.last_1h.success_rate, null, 'only bans there: nothing of its own to judge');
    assert.ok((banned.cooling_until ?? 0) > Date.now());
    assert.equal((await t.app.inject({ url: '/api/v1/hosts/never.example' })).statusCode, 404);
  });

  test('format=har is HAR 1.2 by its schema, without bodies, headers or query values', async () => {
    const res = await t.app.inject({ url: '/api/v1/requests?format=har&page_size=1000' });
    assert.equal(res.statusCode, 200);
    assert.doesNotMatch(res.body, new RegExp(`${SECRET_QUERY}|${PROXY_PASSWORD}|${CLIENT_PASSWORD}`));
    const ajv = new Ajv({ allErrors: true, strict: false });
    addFormats.default(ajv);
    const validate = ajv.compile(HAR_12_SCHEMA);
    const har: unknown = res.json();
    assert.ok(validate(har), JSON.stringify(validate.errors?.slice(0, 5)));
    const entries = (har as { log: { entries: { request: { url: string; method: string } }[] } }).log.entries;
    assert.ok(entries.some((e) => e.request.method === 'CONNECT'));
    assert.ok(entries.some((e) => e.request.url.startsWith('https://127.0.0.1:')));
  });

  test('the live stream delivers each new call to two clients at once', async () => {
    const a = await openStream('');
    const b = await openStream('?door=api');
    try {
      await t.app.inject({ method: 'POST', url: '/api/v1/request', payload: { url: site.urlB('/live') } });
      const [ea, eb] = await Promise.all([a.next(), b.next()]);
      for (const e of [ea, eb]) {
        assert.equal(e.door, 'api');
        assert.equal(e.path, '/live');
      }
      assert.equal(ea.id, eb.id, 'the same call');
    } finally {
      a.close();
      b.close();
    }
  });
});

describe('ROTA_ACCESS_LOG and ROTA_REQUEST_LOG_SIZE', () => {
  test('the access log writes each call as one JSON line, the same record, nothing secret; size 0 keeps none', async () => {
    const logged = await makeLoggedApp({
      ROTA_SSRF_ALLOW: '127.0.0.0/8',
      ROTA_ACCESS_LOG: 'true',
      ROTA_REQUEST_LOG_SIZE: '0',
    });
    try {
      await addUpstream(logged, {
        url: `http://127.0.0.1:${cleanProxy.port}`,
        username: 'acct-1',
        password: PROXY_PASSWORD,
      });
      const res = await logged.app.inject({
        method: 'POST',
        url: '/api/v1/request',
        payload: { url: site.urlB(`/logged?token=${SECRET_QUERY}`) },
      });
      assert.equal(res.statusCode, 200, res.body);
      const lines = logged.logs.filter((l) => l.includes('"msg":"call"'));
      assert.equal(lines.length, 1);
      const call = (JSON.parse(lines[0] ?? '{}') as { call: RequestRecordT }).call;
      assert.equal(call.path, '/logged');
      assert.equal(call.door, 'api');
      assert.equal(call.outcome, 'success');
      assert.ok(call.bytes_down > 0);
      assert.doesNotMatch(lines[0] ?? '', new RegExp(`${SECRET_QUERY}|${PROXY_PASSWORD}`));
      const page = (await logged.app.inject({ url: '/api/v1/requests' })).json() as { data: RequestsPageT };
      assert.deepEqual([page.data.capacity, page.data.total], [0, 0], 'the log is off');
      const hosts = (await logged.app.inject({ url: '/api/v1/hosts' })).json() as {
        data: { items: { host: string }[] };
      };
      assert.deepEqual(
        hosts.data.items.map((h) => h.host),
        ['127.0.0.1'],
        'per-host analytics stay on',
      );
    } finally {
      await logged.close();
    }
  });
});

/** A Server-Sent Events client of GET requests/stream: next() resolves with the next record. */
async function openStream(query: string): Promise<{ next(): Promise<RequestRecordT>; close(): void }> {
  const queue: RequestRecordT[] = [];
  const waiting: ((r: RequestRecordT) => void)[] = [];
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const path = `/api/v1/requests/stream${query}`;
    const headers = { accept: 'text/event-stream' };
    http.get({ host: '127.0.0.1', port: apiPort, path, headers }, resolve).on('error', reject);
  });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^text\/event-stream/);
  let buf = '';
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    buf += chunk;
    for (let end = buf.indexOf('\n\n'); end !== -1; end = buf.indexOf('\n\n')) {
      const event = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const data = /^data: (.*)$/m.exec(event)?.[1];
      if (data === undefined) continue;
      const r = JSON.parse(data) as RequestRecordT;
      const w = waiting.shift();
      if (w) w(r);
      else queue.push(r);
    }
  });
  return {
    next: () => {
      const r = queue.shift();
      return r ? Promise.resolve(r) : new Promise((resolve) => waiting.push(resolve));
    },
    close: () => res.destroy(),
  };
}
