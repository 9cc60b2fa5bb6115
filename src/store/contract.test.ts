import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, describe, it } from 'node:test';
import pino from 'pino';
import { plain, rec } from '../../test/helpers/store.ts';
import { hasCredentials, type ProxyRecord } from '../pool/types.ts';
import { MemoryStore } from './memory.ts';
import { SqliteStore } from './sqlite.ts';
import { DuplicateProxyError, type ProxyStore } from './types.ts';

async function all(store: ProxyStore): Promise<ProxyRecord[]> {
  const out: ProxyRecord[] = [];
  for await (const page of store.loadPages()) for (const r of page) out.push(plain(r));
  return out;
}

const dir = mkdtempSync(join(tmpdir(), 'rota-contract-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const backends: { name: string; make(): ProxyStore }[] = [
  { name: 'memory', make: () => new MemoryStore() },
  {
    name: 'sqlite',
    make: () =>
      new SqliteStore({
        path: join(dir, `${randomUUID()}.db`),
        secretKey: null,
        logger: pino({ level: 'silent' }),
      }),
  },
];

// Imported by another test file (storeContract for PostgreSQL), this file's own backends are not rerun.
if (import.meta.main) for (const backend of backends) storeContract(backend.name, backend.make);

/** The whole contract against one backend: `make` returns a new, unopened store on an empty database. */
export function storeContract(name: string, make: () => ProxyStore): void {
  const backend = { name, make };
  describe(`ProxyStore contract: ${backend.name}`, () => {
    const made: ProxyStore[] = [];
    const fresh = () => {
      const s = backend.make();
      made.push(s);
      return s;
    };
    const opened = async () => {
      const s = fresh();
      await s.open();
      return s;
    };
    afterEach(async () => {
      for (const s of made.splice(0)) await s.close();
    });

    it('is connected only between open() and close()', async () => {
      const s = fresh();
      assert.equal(s.connected, false);
      await s.open();
      assert.equal(s.connected, true);
      await s.close();
      assert.equal(s.connected, false);
      await s.close();
      assert.equal(s.connected, false, 'a second close() is harmless');
    });

    it('inserts, gets and counts', async () => {
      const s = await opened();
      assert.equal(await s.count(), 0);
      const a = rec({ username: 'alice', password: 'pw', weight: 2.5, country: 'DE', tags: ['x', 'y'] });
      const b = rec({ protocol: 'socks5h', host: '::1', port: 1080 });
      await s.insert(a);
      await s.insert(b);
      assert.equal(await s.count(), 2);
      assert.deepEqual(plain(await s.get(a.id)), a);
      assert.deepEqual(plain(await s.get(b.id)), b);
      assert.equal(await s.get(randomUUID()), null);
    });

    it('loads everything in creation order, not id order', async () => {
      const s = await opened();
      const records = Array.from({ length: 6 }, (_, i) => rec({ port: 1000 + i }));
      for (const r of records) await s.insert(r);
      assert.equal(await s.remove(records[2]!.id), true);
      const late = rec({ port: 2000 });
      await s.insert(late);
      const expected = [...records.slice(0, 2), ...records.slice(3), late];
      assert.deepEqual(await all(s), expected);
    });

    it('rejects a second proxy with the same URL and username', async () => {
      const s = await opened();
      const first = rec({ username: 'alice', password: 'one' });
      await s.insert(first);
      await assert.rejects(s.insert(rec({ username: 'alice', password: 'two' })), DuplicateProxyError);
      await assert.rejects(s.insert({ ...rec({ port: 9 }), id: first.id }), DuplicateProxyError);
      assert.equal(await s.count(), 1);
      await s.insert(rec({ username: 'bob' }));
      await s.insert(rec({ username: null }));
      await s.insert(rec({ username: 'alice', protocol: 'https' }));
      await assert.rejects(s.insert(rec({ username: null })), DuplicateProxyError);
      assert.equal(await s.count(), 4);
    });

    it('inserts many in one go, in the given order, after what was there', async () => {
      const s = await opened();
      const first = rec({ port: 1 });
      await s.insert(first);
      await s.insertMany([]);
      const batch = [
        rec({ port: 2, username: 'bulk-user', password: 'bulk-pw', tags: ['source:a'] }),
        rec({ port: 3, protocol: 'socks5', country: 'FR', weight: 3 }),
        rec({ port: 4 }),
      ];
      await s.insertMany(batch);
      assert.equal(await s.count(), 4);
      assert.deepEqual(await all(s), [first, ...batch]);
      assert.deepEqual(plain(await s.get(batch[0]!.id)), batch[0]);
      const late = rec({ port: 5 });
      await s.insert(late);
      assert.deepEqual(await all(s), [first, ...batch, late]);
    });

    it('inserts many all or nothing: a taken or repeated identity or id stores none', async () => {
      const s = await opened();
      const taken = rec({ username: 'alice' });
      await s.insert(taken);
      const fresh = () => [rec({ port: 10 }), rec({ port: 11 })];
      const cases: ProxyRecord[][] = [
        [...fresh(), rec({ username: 'alice', password: 'other' })],
        [...fresh(), rec({ port: 12 }), rec({ port: 12 })],
        [...fresh(), { ...rec({ port: 13 }), id: taken.id }],
      ];
      const twin = rec({ port: 14 });
      cases.push([twin, { ...rec({ port: 15 }), id: twin.id }]);
      for (const batch of cases) {
        await assert.rejects(s.insertMany(batch), DuplicateProxyError);
        assert.equal(await s.count(), 1, 'nothing of a refused batch is kept');
      }
      assert.deepEqual(await all(s), [taken]);
      const ok = fresh();
      await s.insertMany(ok);
      assert.deepEqual(await all(s), [taken, ...ok], 'the identities of refused batches stay free');
    });

    it('a long batch stays all or nothing while other writes come in during it, and those land', async () => {
      const s = await opened();
      const taken = rec({ username: 'taken' });
      const gone = rec({ port: 3 });
      await s.insert(taken);
      await s.insert(gone);
      const turns = async (n: number) => {
        for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
      };
      // Refused (its last record repeats a stored identity) after the store has given the loop turns.
      const refused = Array.from({ length: 2500 }, (_, i) => rec({ port: 20_000 + i }));
      refused.push(rec({ username: 'taken' }));
      const failing = assert.rejects(s.insertMany(refused), DuplicateProxyError);
      await turns(20);
      const during = rec({ port: 1 });
      await Promise.all([failing, s.insert(during), s.putSetting('during', 1), s.remove(gone.id)]);
      assert.deepEqual(await all(s), [taken, during]);
      assert.equal(await s.getSetting('during'), 1);
      // Stored, with a write made during it.
      const stored = Array.from({ length: 2500 }, (_, i) => rec({ port: 30_000 + i }));
      const storing = s.insertMany(stored);
      await turns(20);
      const later = rec({ port: 2 });
      await Promise.all([storing, s.insert(later)]);
      const ids = new Set((await all(s)).map((r) => r.id));
      assert.equal(ids.size, 2503);
      assert.ok(ids.has(later.id) && ids.has(during.id) && stored.every((r) => ids.has(r.id)));
    });

    it('two long batches at once both land, one after the other', async () => {
      const s = await opened();
      const a = Array.from({ length: 1500 }, (_, i) => rec({ port: 40_000 + i }));
      const b = Array.from({ length: 1500 }, (_, i) => rec({ port: 50_000 + i }));
      await Promise.all([s.insertMany(a), s.insertMany(b)]);
      assert.equal(await s.count(), 3000);
    });

    it('removes once, then reports false, and frees the identity', async () => {
      const s = await opened();
      const r = rec({ username: 'u' });
      await s.insert(r);
      assert.equal(await s.remove(r.id), true);
      assert.equal(await s.remove(r.id), false);
      assert.equal(await s.remove(randomUUID()), false);
      assert.equal(await s.get(r.id), null);
      await s.insert(rec({ username: 'u' }));
      assert.equal(await s.count(), 1);
    });

    it('round-trips settings as copies', async () => {
      const s = await opened();
      assert.equal(await s.getSetting('missing'), null);
      const value = { strategy: 'random', limits: { a: 1 }, list: [1, 'two', null] };
      await s.putSetting('k', value);
      value.limits.a = 99;
      const got = (await s.getSetting('k')) as typeof value;
      assert.deepEqual(got, { strategy: 'random', limits: { a: 1 }, list: [1, 'two', null] });
      got.list.push('mutated');
      assert.deepEqual(((await s.getSetting('k')) as typeof value).list, [1, 'two', null]);
      await s.putSetting('k', 42);
      assert.equal(await s.getSetting('k'), 42);
      await s.putSetting('other', 'text');
      assert.equal(await s.getSetting('other'), 'text');
      assert.equal(await s.getSetting('k'), 42);
    });

    it('adds a setting only where there is none: of many adds at once exactly one lands', async () => {
      const s = await opened();
      // At once: the PostgreSQL store sends them on several connections of its pool.
      const results = await Promise.all(Array.from({ length: 8 }, (_, n) => s.addSetting('first', { n })));
      assert.equal(results.filter(Boolean).length, 1, JSON.stringify(results));
      const won = results.indexOf(true);
      assert.deepEqual(await s.getSetting('first'), { n: won });
      assert.equal(await s.addSetting('first', { n: 99 }), false, 'an add over a value changes nothing');
      assert.deepEqual(await s.getSetting('first'), { n: won });
      await s.putSetting('first', { n: 100 });
      assert.deepEqual(await s.getSetting('first'), { n: 100 }, 'a put still replaces');
    });

    it('keeps null and unicode credentials exactly', async () => {
      const s = await opened();
      const none = rec();
      const onlyUser = rec({ host: 'a.example', username: 'ünïcode-用户', password: null });
      const fancy = rec({ host: 'b.example', username: 'emoji 🔑 :@/', password: 'pässwörd \u0000 密码 🧪' });
      const onlyPassword = rec({ host: 'c.example', username: null, password: 'p' });
      for (const r of [none, onlyUser, fancy, onlyPassword]) await s.insert(r);
      const raw: ProxyRecord[] = [];
      for await (const page of s.loadPages()) for (const r of page) raw.push(r);
      // Told before anything is decrypted (records loaded from a SQL store keep credentials sealed).
      assert.deepEqual(raw.map(hasCredentials), [false, true, true, true]);
      assert.deepEqual(await all(s), [none, onlyUser, fancy, onlyPassword]);
    });

    it('opens a sealed secret under its own context only; the SQL stores never keep it as given', async () => {
      const s = await opened();
      const secret = 'Bearer s3cr3t-ü';
      const sealed = s.sealSecret(secret, 'source/a/authorization');
      assert.equal(typeof sealed, 'string');
      assert.equal(s.openSecret(sealed, 'source/a/authorization'), secret);
      if (s.backend === 'memory') return;
      assert.equal(sealed.includes('s3cr3t'), false);
      assert.notEqual(s.sealSecret(secret, 'source/a/authorization'), sealed, 'a fresh IV each time');
      assert.throws(() => s.openSecret(sealed, 'source/b/authorization'), {
        code: 'CREDENTIAL_DECRYPT_ERROR',
      });
    });

    it('keeps its data across close() and open() of the same instance', async () => {
      const s = await opened();
      const r = rec({ username: 'kept', password: 'kept-pw' });
      await s.insert(r);
      await s.putSetting('k', { v: 1 });
      await s.close();
      assert.equal(s.connected, false);
      await s.open();
      assert.deepEqual(await all(s), [r]);
      assert.deepEqual(await s.getSetting('k'), { v: 1 });
    });
  });
}
