/**
 * Exit identity (issue 36) through the real server: fixture proxies with their own egress addresses on
 * loopback (127.0.0.2, .3), an echo endpoint answering the caller's address, and a GeoIP file built by
 * the test (test/helpers/mmdb.ts). Health checks record exit_ip (not for a gateway), mark the proxies that
 * share one, fill exit_country/exit_asn; the listener's country filter uses exit_country when no country
 * is declared; a ban on one proxy cools its exit-sharer for that host; a changed exit is logged and
 * counted; all of it survives a restart (SQLite).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type BanTarget, startBanTarget } from './fixtures/ban-target.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { listen } from './fixtures/server.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { GENEROUS_LIMITS } from './helpers/app.ts';
import { type RotaGateway, startRotaGateway } from './helpers/forward-rota.ts';
import { writeMmdb } from './helpers/mmdb.ts';

interface ProxyView {
  id: string;
  display_label: string | null;
  kind: string;
  country: string | null;
  exit_ip: string | null;
  exit_ip_seen_at: string | null;
  exit_country: string | null;
  exit_asn: number | null;
  exit_shared_with: number;
}

const dir = mkdtempSync(join(tmpdir(), 'rota-exit-e2e-'));
const db = join(dir, 'pool.db');
const geoDb = join(dir, 'geo.mmdb');
/**
 * The echo endpoint: the caller's address, or (to play a provider swapping it) what `swap` says, or (a
 * rotating port) a new address at every request from an address in `rotating`.
 */
const swap = new Map<string, string>();
const rotating = new Set<string>();
let rotations = 0;
const echo = http.createServer((req, res) => {
  const from = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
  const ip = rotating.has(from) ? `198.51.100.${++rotations}` : (swap.get(from) ?? from);
  const body = req.url === '/json' ? JSON.stringify({ ip }) : `${ip}\n`;
  res.writeHead(200, { 'content-type': req.url === '/json' ? 'application/json' : 'text/plain' }).end(body);
});
let echoPort = 0;
let target: TargetServer;
let banSite: BanTarget;
let nl1: ForwardProxy;
let nl2: ForwardProxy;
let de: ForwardProxy;
let gw: ForwardProxy;
let rot: ForwardProxy;
let rota: RotaGateway;
const ids: Record<string, string> = {};

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${rota.api}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json()) as { data: T };
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

const view = (id: string) => api<ProxyView>('GET', `/api/v1/proxies/${id}`);

async function start(): Promise<void> {
  rota = await startRotaGateway({
    ...GENEROUS_LIMITS,
    ROTA_STORAGE_PATH: db,
    ROTA_LOG_LEVEL: 'info',
    ROTA_HEALTH_CHECK_URL: target.url('/json').href,
    ROTA_EXIT_IP_URL: `http://127.0.0.1:${echoPort}/json`,
    ROTA_GEOIP_DB: geoDb,
    ROTA_TIMEOUT: '5',
  });
}

/** A GET through the HTTP listener (absolute URI), with `X-Rota-Country`: the echo's answer. */
function viaListener(
  country: string,
  url = `http://127.0.0.1:${echoPort}/text`,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port: rota.httpPort,
      path: url,
      headers: { 'x-rota-country': country },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString('utf8');
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: body.trim() }));
    });
    req.on('error', reject);
    req.end();
  });
}

before(async () => {
  echoPort = await listen(echo);
  writeMmdb(geoDb, [
    { cidr: '127.0.0.2', data: { country: { iso_code: 'NL' }, autonomous_system_number: 64500 } },
    { cidr: '127.0.0.3', data: { country: { iso_code: 'DE' }, autonomous_system_number: 64501 } },
  ]);
  [target, banSite, nl1, nl2, de, gw] = await Promise.all([
    startTarget(),
    startBanTarget(['127.0.0.2']),
    startForwardProxy({ egress: '127.0.0.2' }),
    startForwardProxy({ egress: '127.0.0.2' }),
    startForwardProxy({ egress: '127.0.0.3' }),
    startForwardProxy({ egress: '127.0.0.4' }),
  ]);
  rot = await startForwardProxy({ egress: '127.0.0.6' });
  await start();
  ids.nl1 = await rota.addProxy({ url: `http://127.0.0.1:${nl1.port}` });
  ids.nl2 = await rota.addProxy({ url: `http://127.0.0.1:${nl2.port}` });
  ids.de = await rota.addProxy({ url: `http://127.0.0.1:${de.port}` });
  ids.gw = await rota.addProxy({
    url: `http://127.0.0.1:${gw.port}`,
    username_template: 'gw-acme-session-{session}',
  });
});

after(async () => {
  await rota?.close();
  await Promise.all([
    target?.close(),
    banSite?.close(),
    nl1?.close(),
    nl2?.close(),
    de?.close(),
    gw?.close(),
    rot?.close(),
  ]);
  echo.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('exit identity (ROTA_EXIT_IP_URL, ROTA_GEOIP_DB)', () => {
  test('health checks record each exit, its country and ASN, and who shares it; not for a gateway', async () => {
    const results = await api<{ status: string }[]>('POST', '/api/v1/proxies/health-check', {});
    assert.deepEqual(
      results.map((r) => r.status),
      ['working', 'working', 'working', 'working'],
    );
    const [a, b, c, g] = await Promise.all([ids.nl1, ids.nl2, ids.de, ids.gw].map((id) => view(id ?? '')));
    assert.deepEqual(
      [a?.exit_ip, a?.exit_country, a?.exit_asn, a?.exit_shared_with],
      ['127.0.0.2', 'NL', 64500, 1],
    );
    assert.deepEqual([b?.exit_ip, b?.exit_shared_with], ['127.0.0.2', 1]);
    assert.deepEqual(
      [c?.exit_ip, c?.exit_country, c?.exit_asn, c?.exit_shared_with],
      ['127.0.0.3', 'DE', 64501, 0],
    );
    assert.ok(a?.exit_ip_seen_at && !Number.isNaN(Date.parse(a.exit_ip_seen_at)));
    assert.deepEqual(
      [g?.kind, g?.exit_ip, g?.exit_shared_with, g?.display_label],
      ['gateway', null, 0, 'gw-acme'],
    );
    assert.equal(a?.country, null, 'the declared country stays unset');
  });

  test('the country filter takes exit_country when none is declared, the declared one when it is', async () => {
    for (let i = 0; i < 4; i++) {
      const nl = await viaListener('NL');
      assert.equal(nl.status, 200);
      assert.equal(nl.body, '127.0.0.2', 'an NL exit');
      const de = await viaListener('DE');
      assert.equal(de.body, '127.0.0.3');
    }
    // Declared wins: the DE-exit proxy declared FR is no longer DE, and is FR.
    await api('PATCH', `/api/v1/proxies/${ids.de}`, { country: 'FR' });
    assert.equal((await viaListener('FR')).body, '127.0.0.3');
    assert.notEqual((await viaListener('DE')).status, 200, 'no DE proxy left');
    await api('PATCH', `/api/v1/proxies/${ids.de}`, { country: null });
    assert.equal((await viaListener('DE')).body, '127.0.0.3');
  });

  test('a ban on one proxy cools every proxy sharing its exit address, for that host only', async () => {
    // Only the two NL proxies may serve (the listener's country filter): the first one is banned.
    const answer = await viaListener('NL', banSite.urlA('/page'));
    assert.notEqual(answer.status, 200);
    const bans = await api<{ items: { proxy_id: string; host: string }[] }>(
      'GET',
      '/api/v1/bans?host=127.0.0.2',
    );
    const banned = new Set(bans.items.map((b) => b.proxy_id));
    assert.ok(banned.has(ids.nl1 ?? '') && banned.has(ids.nl2 ?? ''), JSON.stringify(bans.items));
    assert.equal(banned.has(ids.de ?? ''), false);
    const fromShared = banSite.seen.filter((s) => s.host === 'A' && s.from === '127.0.0.2');
    assert.equal(fromShared.length, 1, 'the sharer was never tried: its exit was banned already');
    const other = await api<{ items: unknown[] }>('GET', '/api/v1/bans?host=127.0.0.1');
    assert.equal(other.items.length, 0);
  });

  test('a static proxy whose exit moves is logged and counted; exits survive a restart', async () => {
    swap.set('127.0.0.3', '127.0.0.9');
    await api('POST', '/api/v1/proxies/health-check', { proxy_ids: [ids.de] });
    const moved = await view(ids.de ?? '');
    assert.deepEqual([moved.exit_ip, moved.exit_country], ['127.0.0.9', null]);
    const metrics = await (await fetch(`${rota.api}/metrics`)).text();
    assert.match(metrics, /^rota_exit_changes_total 1$/m);
    // The log line is written asynchronously: wait for it a little.
    for (let i = 0; i < 40 && !/a static proxy's exit address changed/.test(rota.output()); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.match(rota.output(), /a static proxy's exit address changed/);
    swap.clear();
    await rota.close();
    await start();
    const again = await view(ids.nl1 ?? '');
    assert.deepEqual([again.exit_ip, again.exit_country, again.exit_shared_with], ['127.0.0.2', 'NL', 1]);
    assert.equal((await viaListener('NL')).body, '127.0.0.2', 'the learned country selects after a restart');
  });

  test('a proxy whose exit moves at every check is taken for a rotating one: logged once, no exit kept', async () => {
    const id = await rota.addProxy({ url: `http://127.0.0.1:${rot.port}` });
    rotating.add('127.0.0.6');
    const check = async () => {
      await api('POST', '/api/v1/proxies/health-check', { proxy_ids: [id] });
      return (await view(id)).exit_ip;
    };
    const seen = [];
    for (let i = 0; i < 5; i++) seen.push(await check());
    // Recorded while it might be a swap (the second and third are logged as changes), then not kept.
    assert.deepEqual(seen.slice(3), [null, null]);
    assert.ok(
      seen.slice(0, 3).every((ip) => ip?.startsWith('198.51.100.')),
      String(seen),
    );
    const lines = () =>
      rota
        .output()
        .split('\n')
        .filter((l) => l.includes(id));
    for (let i = 0; i < 40 && !lines().some((l) => l.includes('rotating')); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(lines().filter((l) => l.includes('taken for a rotating proxy')).length, 1, 'logged once');
    assert.equal(lines().filter((l) => l.includes('exit address changed')).length, 2);
    // Steady again: its exit is recorded from the second check that sees the same address.
    rotating.clear();
    assert.equal(await check(), null);
    assert.equal(await check(), '127.0.0.6');
  });
});
