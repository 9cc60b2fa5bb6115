import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Reader } from 'mmdb-lib';
import { buildMmdb, writeMmdb } from '../../test/helpers/mmdb.ts';
import { CooldownTable } from '../bans/cooldowns.ts';
import { BanJudge } from '../bans/judge.ts';
import { BanPolicyHolder } from '../bans/policy.ts';
import { loadConfig } from '../config.ts';
import { Pool } from '../pool/pool.ts';
import { MemoryStore } from '../store/memory.ts';
import { exitAddress } from './echo.ts';
import { GeoIp } from './geoip.ts';
import { exitSharers } from './learner.ts';

const dir = mkdtempSync(join(tmpdir(), 'rota-exit-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('the echo answer: text or {"ip": ...}; anything else is no address', () => {
  assert.equal(exitAddress(Buffer.from('203.0.113.7\n')), '203.0.113.7');
  assert.equal(exitAddress(Buffer.from('{"ip":"2001:DB8::1"}')), '2001:db8::1');
  assert.equal(exitAddress(Buffer.from('{"origin":"198.51.100.1, 10.0.0.1"}')), '198.51.100.1');
  assert.equal(exitAddress(Buffer.from('<html>blocked</html>')), null);
  assert.equal(exitAddress(Buffer.from('{"ip": 5}')), null);
  assert.equal(exitAddress(Buffer.from('999.1.1.1')), null);
});

test('the test MMDB writer: what it writes mmdb-lib reads back, network by network', () => {
  const db = buildMmdb([
    { cidr: '127.0.0.2', data: { country: { iso_code: 'NL' }, autonomous_system_number: 64500 } },
    { cidr: '198.51.100.0/24', data: { country: { iso_code: 'de', names: { en: 'Germany' } } } },
  ]);
  const reader = new Reader(db);
  assert.equal(reader.metadata.nodeCount > 0, true);
  assert.deepEqual(reader.get('127.0.0.2'), { country: { iso_code: 'NL' }, autonomous_system_number: 64500 });
  assert.deepEqual(reader.get('198.51.100.77'), { country: { iso_code: 'de', names: { en: 'Germany' } } });
  assert.equal(reader.get('127.0.0.3'), null);
});

test('GeoIp: country (upper case) and ASN from a country, city or ASN file; nothing for the unknown', () => {
  const path = join(dir, 'geo.mmdb');
  writeMmdb(path, [
    { cidr: '127.0.0.2', data: { country: { iso_code: 'nl' }, autonomous_system_number: 64500 } },
    { cidr: '127.0.0.3', data: { registered_country: { iso_code: 'FR' } } },
    { cidr: '127.0.0.4', data: { autonomous_system_number: 64501, autonomous_system_organization: 'X' } },
  ]);
  const geo = new GeoIp(path);
  assert.deepEqual(geo.lookup('127.0.0.2'), { country: 'NL', asn: 64500 });
  assert.deepEqual(geo.lookup('127.0.0.3'), { country: 'FR', asn: null });
  assert.deepEqual(geo.lookup('127.0.0.4'), { country: null, asn: 64501 });
  assert.deepEqual(geo.lookup('127.0.0.9'), { country: null, asn: null });
  assert.deepEqual(geo.lookup('::1'), { country: null, asn: null });
  assert.throws(() => new GeoIp(join(dir, 'missing.mmdb')));
});

test('a ban of one proxy cools every proxy sharing its exit address for that host, each reported', async () => {
  const store = new MemoryStore();
  await store.open();
  let now = 1_000_000;
  const pool = new Pool(store, () => now);
  const [a, b, c] = await Promise.all(
    ['http://10.0.0.1:1', 'http://10.0.0.2:1', 'http://10.0.0.3:1'].map((url) => pool.add({ url })),
  );
  assert.ok(a && b && c);
  await pool.setExit(a, { ip: '192.0.2.50', seenAt: now, country: null, asn: null });
  await pool.setExit(b, { ip: '192.0.2.50', seenAt: now, country: null, asn: null });
  await pool.setExit(c, { ip: '192.0.2.51', seenAt: now, country: null, asn: null });
  const table = new CooldownTable({ now: () => now });
  const reported: string[] = [];
  const policy = new BanPolicyHolder(store, loadConfig({}));
  const judge = new BanJudge(
    policy,
    table,
    (e) => reported.push(e.proxyId),
    (id) => exitSharers(pool, id),
  );
  assert.equal(
    judge.judge(a.record.id, 'shop.example', { status: 403, headers: {}, body: Buffer.alloc(0) }),
    true,
  );
  const cooling = [...(table.forHost('shop.example')?.keys() ?? [])].sort();
  assert.deepEqual(cooling, [a.record.id, b.record.id].sort());
  assert.deepEqual(reported.sort(), [a.record.id, b.record.id].sort());
  assert.equal(table.forHost('other.example'), undefined, 'for that host only');
  judge.judge(c.record.id, 'shop.example', { status: 403, headers: {}, body: Buffer.alloc(0) });
  assert.equal(table.forHost('shop.example')?.size, 3, 'c shares with nobody');
  now += 1;
});
