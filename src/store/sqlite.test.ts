import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pino from 'pino';
import { plain, rec } from '../../test/helpers/store.ts';
import { loadConfig } from '../config.ts';
import type { ProxyRecord } from '../pool/types.ts';
import { hasCredentials } from '../pool/types.ts';
import { CredentialDecryptError, StorageKeyError } from './crypto.ts';
import { MIGRATIONS, MigrationError, migrate } from './migrations.ts';
import { openStore } from './open.ts';
import { SqliteStore } from './sqlite.ts';
import type { ProxyStore } from './types.ts';

const silent = pino({ level: 'silent' });
const dir = mkdtempSync(join(tmpdir(), 'rota-sqlite-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const dbPath = () => join(dir, `t${++n}.db`);

async function openAt(path: string, secretKey: Buffer | null = null): Promise<SqliteStore> {
  // A turn every 64 rows, whatever the machine's speed: the tests below need the transaction open across turns.
  const s = new SqliteStore({ path, secretKey, logger: silent, insertSliceMs: 0 });
  await s.open();
  return s;
}

async function all(store: ProxyStore): Promise<ProxyRecord[]> {
  const out: ProxyRecord[] = [];
  for await (const page of store.loadPages()) for (const r of page) out.push(r);
  return out;
}

/** Resolves once the store's connection is inside a transaction (insertMany's, open across turns). */
async function transactionOpen(s: SqliteStore): Promise<void> {
  const db = (s as unknown as { state: { db: Database.Database } }).state.db;
  for (let i = 0; i < 10_000 && !db.inTransaction; i++) await new Promise((r) => setImmediate(r));
  assert.ok(db.inTransaction, 'the bulk insert never opened its transaction');
}

/** The database, its WAL and its shared-memory file, as they are on disk right now. */
function rawBytes(path: string): Buffer {
  const parts = ['', '-wal', '-shm'].filter((s) => existsSync(path + s)).map((s) => readFileSync(path + s));
  return Buffer.concat(parts);
}

describe('SqliteStore', () => {
  it('keeps records, ids, creation order and settings across a restart', async () => {
    const path = dbPath();
    const s1 = await openAt(path);
    const records = [rec({ username: 'a', password: 'p1' }), rec({ port: 1 }), rec({ username: 'c' })];
    for (const r of records) await s1.insert(r);
    await s1.putSetting('runtime', { strategy: 'weighted' });
    await s1.close();
    const s2 = await openAt(path);
    assert.deepEqual((await all(s2)).map(plain), records);
    assert.deepEqual(await s2.getSetting('runtime'), { strategy: 'weighted' });
    await s2.insert(rec({ port: 2 }));
    assert.equal((await all(s2)).at(-1)?.port, 2, 'new records still come last');
    await s2.close();
  });

  it('never writes a username or password in clear, in the database file or the WAL', async () => {
    const path = dbPath();
    const user = 'zebra-user-7781';
    const pass = 'Unique-Pa55w0rd-4412';
    const s = await openAt(path);
    await s.insert(rec({ host: 'rawbytes-host.example', username: user, password: pass }));
    for (const phase of ['before close (WAL)', 'after close (checkpointed)']) {
      const bytes = rawBytes(path);
      assert.ok(bytes.includes(Buffer.from('rawbytes-host.example')), `control: host is readable ${phase}`);
      assert.ok(!bytes.includes(Buffer.from(user)), `username in clear ${phase}`);
      assert.ok(!bytes.includes(Buffer.from(pass)), `password in clear ${phase}`);
      await s.close();
    }
    const key = readFileSync(`${path}.key`, 'latin1').trim();
    assert.ok(!rawBytes(path).includes(Buffer.from(key)), 'the key is not stored with the data');
  });

  it('creates a private key file beside the database and reuses it', async () => {
    const path = dbPath();
    const s1 = await openAt(path);
    await s1.insert(rec({ username: 'u', password: 'p' }));
    await s1.close();
    const keyFile = `${path}.key`;
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
    assert.equal(statSync(path).mode & 0o777, 0o600, 'the database file is private too');
    const key = readFileSync(keyFile, 'latin1');
    assert.match(key, /^[0-9a-f]{64}\n$/);
    const s2 = await openAt(path);
    assert.equal((await all(s2))[0]?.password, 'p');
    await s2.close();
    assert.equal(readFileSync(keyFile, 'latin1'), key, 'the key file is never rewritten');
    const s3 = await openAt(path, Buffer.from(key.trim(), 'hex'));
    assert.equal((await all(s3))[0]?.password, 'p', 'the key file content also works as ROTA_SECRET_KEY');
    await s3.close();
  });

  it('refuses a wrong ROTA_SECRET_KEY with a clear error that never shows a key', async () => {
    const path = dbPath();
    const right = randomBytes(32);
    const wrong = randomBytes(32);
    const env = (key: Buffer) =>
      loadConfig({ ROTA_STORAGE_PATH: path, ROTA_SECRET_KEY: key.toString('hex') });
    const s1 = await openStore(env(right), silent);
    await s1.open();
    await s1.insert(rec({ username: 'u', password: 'p' }));
    await s1.close();
    const s2 = await openStore(env(wrong), silent);
    await assert.rejects(s2.open(), (e: unknown) => {
      assert.ok(e instanceof StorageKeyError);
      assert.match(e.message, /ROTA_SECRET_KEY does not match the key the database .* was created with/);
      for (const k of [right, wrong]) {
        assert.ok(!e.message.includes(k.toString('hex')) && !e.message.includes(k.toString('base64')));
      }
      return true;
    });
    assert.equal(s2.connected, false);
    assert.equal(existsSync(`${path}.key`), false, 'no key file is created when ROTA_SECRET_KEY is set');
    await assert.rejects(openAt(path), /key is missing: set ROTA_SECRET_KEY or restore the key file/);
    assert.equal(existsSync(`${path}.key`), false, 'no new key is invented for existing data');
    const s3 = await openStore(env(right), silent);
    await s3.open();
    assert.equal(await s3.count(), 1);
    await s3.close();
  });

  it('fails loudly on a damaged or moved credential instead of returning garbage', async () => {
    const path = dbPath();
    const s = await openAt(path);
    const a = rec({ username: 'ua', password: 'secret-a' });
    const b = rec({ username: 'ub', password: 'secret-b' });
    const c = rec({ host: 'c.example', username: 'uc', password: null });
    for (const r of [a, b, c]) await s.insert(r);
    await s.close();
    const db = new Database(path);
    db.prepare(
      'UPDATE proxies SET password_enc = (SELECT password_enc FROM proxies WHERE id = ?) WHERE id = ?',
    ).run(a.id, b.id);
    db.prepare(
      'UPDATE proxies SET username_enc = (SELECT username_enc FROM proxies WHERE id = ?) WHERE id = ?',
    ).run(a.id, c.id);
    db.close();
    const s2 = await openAt(path);
    assert.equal((await s2.get(a.id))?.password, 'secret-a');
    await assert.rejects(s2.get(b.id), (e: unknown) => {
      assert.ok(e instanceof CredentialDecryptError);
      assert.ok(e.message.includes(b.id) && !e.message.includes('secret'));
      return true;
    });
    // At start-up a password is decrypted on first read: the damaged one throws there, never garbage.
    const loaded = await all(s2);
    // Whether it has credentials is known without decrypting them (GET proxies, the NDJSON export): the
    // moved username fails only where it is read.
    const moved = loaded.find((r) => r.id === c.id);
    assert.ok(moved && hasCredentials(moved));
    assert.throws(() => moved.username, CredentialDecryptError);
    assert.equal(loaded.find((r) => r.id === a.id)?.password, 'secret-a');
    assert.throws(() => loaded.find((r) => r.id === b.id)?.password, CredentialDecryptError);
    await s2.close();
  });

  it('tells an empty sealed value (damaged) from a missing one when loading, field by field', async () => {
    const path = dbPath();
    const s = await openAt(path);
    const both = rec({ host: 'both.example', username: 'u1', password: 'p1' });
    const onlyPass = rec({ host: 'pass.example', username: null, password: 'p2' });
    const emptied = rec({ host: 'emptied.example', username: 'u3', password: 'p3' });
    for (const r of [both, onlyPass, emptied]) await s.insert(r);
    await s.close();
    const db = new Database(path);
    db.prepare("UPDATE proxies SET username_enc = x'' WHERE id = ?").run(emptied.id);
    db.close();
    const s2 = await openAt(path);
    const loaded = new Map((await all(s2)).map((r) => [r.id, r]));
    assert.equal(loaded.get(both.id)?.username, 'u1');
    assert.equal(loaded.get(both.id)?.password, 'p1');
    assert.equal(loaded.get(onlyPass.id)?.username, null);
    assert.equal(loaded.get(onlyPass.id)?.password, 'p2');
    // A zero-length value is not "no username": it fails to open, and the password beside it still opens.
    const e = loaded.get(emptied.id);
    assert.ok(e && hasCredentials(e));
    assert.throws(() => e.username, CredentialDecryptError);
    assert.equal(e.password, 'p3');
    assert.throws(() => e.username, CredentialDecryptError);
    await s2.close();
  });

  it('uses WAL and a versioned schema; migrations are idempotent on reopen', async () => {
    const path = dbPath();
    await (await openAt(path)).close();
    await (await openAt(path)).close();
    const db = new Database(path);
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(db.pragma('user_version', { simple: true }), MIGRATIONS.length);
    assert.deepEqual(migrate(db), { from: MIGRATIONS.length, to: MIGRATIONS.length });
    db.close();
  });

  it('rolls back a failing migration and refuses a schema newer than it knows', () => {
    const db = new Database(join(dir, 'migrations.db'));
    const broken = [
      ...MIGRATIONS,
      {
        version: MIGRATIONS.length + 1,
        description: 'half-done step',
        up(d: Database.Database) {
          d.exec('CREATE TABLE half_done (x)');
          throw new Error('boom');
        },
      },
    ];
    assert.throws(() => migrate(db, broken), MigrationError);
    assert.equal(db.pragma('user_version', { simple: true }), 0, 'nothing was applied');
    assert.equal(db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table'").pluck().get(), 0);
    db.pragma(`user_version = ${MIGRATIONS.length + 5}`);
    assert.throws(() => migrate(db), /upgrade Rota/);
    db.close();
  });

  it('is chosen by openStore when ROTA_STORAGE_PATH is set, creating missing directories', async () => {
    const path = join(dir, 'nested', 'deeper', 'rota.db');
    const store = await openStore(loadConfig({ ROTA_STORAGE_PATH: path }), silent);
    assert.equal(store.backend, 'sqlite');
    await store.open();
    assert.ok(existsSync(path) && existsSync(`${path}.key`));
    await store.close();
    assert.equal((await openStore(loadConfig({}), silent)).backend, 'memory');
  });

  it('a bulk insert lets the event loop turn, and what others write meanwhile is neither lost nor in its rollback', async () => {
    const path = dbPath();
    const s = await openAt(path);
    const taken = rec({ host: 'taken.example' });
    await s.insert(taken);
    // 4,000 rows, the last one a duplicate: the whole batch must roll back, after several slices.
    const batch = Array.from({ length: 4000 }, (_, i) => rec({ host: `h${i}.example`, username: `u${i}` }));
    batch.push({ ...rec(), host: taken.host });
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    let err: unknown;
    try {
      const bulk = s.insertMany(batch).then(
        () => null,
        (e: unknown) => e,
      );
      // Written while the bulk insert's transaction is open: must wait for it, then land.
      await transactionOpen(s);
      const other = rec({ host: 'other.example' });
      const wrote = Promise.all([s.insert(other), s.putSetting('during', { v: 1 })]);
      err = await bulk;
      await wrote;
    } finally {
      clearInterval(ticker);
    }
    assert.ok(
      err instanceof Error && (err as { code?: unknown }).code === 'PROXY_ALREADY_EXISTS',
      String(err),
    );
    assert.ok(turns > 2, `the event loop turned ${turns} times during the bulk insert`);
    const hosts = (await all(s)).map((r) => r.host).sort();
    assert.deepEqual(hosts, ['other.example', 'taken.example']);
    assert.deepEqual(await s.getSetting('during'), { v: 1 });
    await s.close();
    // Durable as acknowledged: the same holds for a fresh connection.
    const again = await openAt(path);
    assert.deepEqual((await all(again)).map((r) => r.host).sort(), ['other.example', 'taken.example']);
    await again.close();
  });

  it('a bulk insert and a write made while it runs both commit, every row once', async () => {
    const s = await openAt(dbPath());
    const batch = Array.from({ length: 2500 }, (_, i) => rec({ host: `b${i}.example` }));
    const bulk = s.insertMany(batch);
    await transactionOpen(s);
    const late = rec({ host: 'late.example' });
    await Promise.all([bulk, s.insert(late)]);
    const hosts = (await all(s)).map((r) => r.host);
    assert.equal(hosts.length, 2501);
    assert.equal(new Set(hosts).size, 2501);
    assert.ok(hosts.includes('late.example'));
    await s.close();
  });
});
