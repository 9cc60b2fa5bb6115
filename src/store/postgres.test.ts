/**
 * The PostgreSQL store against a throwaway server (test/helpers/postgres.ts): the shared store contract,
 * credentials encrypted at rest, the key check, migrations raced by several instances, a restart, bulk
 * inserts past one batch, and how the config selects it. Faults and the API: test/store-postgres*.test.ts.
 */
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import pino from 'pino';
import { startPostgres, type TestPostgres } from '../../test/helpers/postgres.ts';
import { plain, rec } from '../../test/helpers/store.ts';
import { ConfigError, loadConfig } from '../config.ts';
import type { ProxyRecord } from '../pool/types.ts';
import { storeContract } from './contract.test.ts';
import { storeUpdateContract } from './contract-update.test.ts';
import { StorageKeyError } from './crypto.ts';
import { MigrationError } from './migrations.ts';
import { openStore } from './open.ts';
import { PostgresStore, type PostgresStoreOptions } from './postgres.ts';
import { isUnavailable, StorageUnavailableError } from './postgres-errors.ts';
import { migratePg, PG_MIGRATIONS } from './postgres-schema.ts';

const silent = pino({ level: 'silent' });
const key = randomBytes(32);
const server: TestPostgres = await startPostgres();
after(() => server.destroy());
let databases = 0;

/** A store on a database that is created, empty, by its first open(). */
class FreshDatabaseStore extends PostgresStore {
  readonly name: string;
  readonly databaseUrl: string;
  private created = false;
  constructor(name: string, options: Partial<Omit<PostgresStoreOptions, 'url' | 'logger'>> = {}) {
    super({ secretKey: key, logger: silent, ...options, url: server.urlFor(name) });
    this.name = name;
    this.databaseUrl = server.urlFor(name);
  }
  override async open(): Promise<void> {
    if (!this.created) await server.createDatabase(this.name);
    this.created = true;
    await super.open();
  }
}

const fresh = (options?: Partial<Omit<PostgresStoreOptions, 'url' | 'logger'>>) =>
  new FreshDatabaseStore(`db${++databases}`, options);

async function all(store: PostgresStore): Promise<ProxyRecord[]> {
  const out: ProxyRecord[] = [];
  for await (const page of store.loadPages()) for (const r of page) out.push(plain(r));
  return out;
}

async function sql<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

storeContract('postgres', () => fresh());
storeUpdateContract('postgres', () => fresh());

describe('PostgresStore', () => {
  let url = '';
  before(async () => {
    url = await server.createDatabase('shared');
  });
  const at = (secretKey: Buffer | null = key) => new PostgresStore({ url, secretKey, logger: silent });

  it('never stores a username or password in clear', async () => {
    const s = fresh();
    await s.open();
    const user = 'zebra-user-7781';
    const pass = 'Unique-Pa55w0rd-4412';
    const r = rec({ host: 'clear-host.example', username: user, password: pass });
    await s.insert(r);
    await s.insertMany([rec({ host: 'bulk.example', username: `${user}-b`, password: `${pass}-b` })]);
    const rows = await sql<Record<string, unknown>>(s.databaseUrl, 'SELECT * FROM rota_proxies');
    const dump = JSON.stringify(rows.map((row) => Object.values(row).map(String)));
    assert.ok(dump.includes('clear-host.example'), 'control: the host is readable');
    assert.ok(!dump.includes(user) && !dump.includes(pass), 'no credential in clear in any column');
    for (const row of rows) {
      assert.ok(Buffer.isBuffer(row.password_enc) && !row.password_enc.includes(Buffer.from(pass)));
    }
    assert.equal((await s.get(r.id))?.password, pass);
    await s.close();
  });

  it('requires ROTA_SECRET_KEY and refuses another key without showing either', async () => {
    const s = at();
    await s.open();
    await s.insert(rec({ username: 'u', password: 'p' }));
    await s.close();
    await assert.rejects(at(null).open(), /ROTA_SECRET_KEY is required/);
    const wrong = randomBytes(32);
    const other = at(wrong);
    await assert.rejects(other.open(), (e: unknown) => {
      assert.ok(e instanceof StorageKeyError);
      assert.match(e.message, /ROTA_SECRET_KEY does not match the key the database 127\.0\.0\.1:\d+\/shared/);
      for (const k of [key, wrong]) assert.ok(!e.message.includes(k.toString('hex')));
      return true;
    });
    assert.equal(other.connected, false);
  });

  it('migrates once when three instances start at the same moment', async () => {
    const raceUrl = await server.createDatabase('race');
    const stores = [1, 2, 3].map(() => new PostgresStore({ url: raceUrl, secretKey: key, logger: silent }));
    await Promise.all(stores.map((s) => s.open()));
    const versions = await sql<{ version: number }>(raceUrl, 'SELECT version FROM rota_schema_version');
    assert.deepEqual(
      versions.map((v) => v.version),
      PG_MIGRATIONS.map((m) => m.version),
    );
    await Promise.all(stores.map((s, i) => s.insert(rec({ port: 100 + i }))));
    assert.equal(await stores[0]!.count(), 3, 'all three write to the one schema');
    for (const s of stores) await s.close();
    const again = new PostgresStore({ url: raceUrl, secretKey: key, logger: silent });
    await again.open();
    assert.equal(await again.count(), 3, 'reopening is idempotent');
    await again.close();
    const meta = await sql<{ n: string }>(raceUrl, 'SELECT COUNT(*) AS n FROM rota_meta');
    assert.equal(meta[0]?.n, '1', 'one key fingerprint');
  });

  it('keeps records, creation order and settings across a restart', async () => {
    const s1 = fresh();
    await s1.open();
    const records = [rec({ username: 'a', password: 'p1' }), rec({ port: 1 }), rec({ username: 'c' })];
    for (const r of records) await s1.insert(r);
    await s1.putSetting('runtime', { strategy: 'weighted' });
    await s1.putSetting('sources', [{ name: 'a' }]);
    await s1.close();
    const s2 = new PostgresStore({ url: s1.databaseUrl, secretKey: key, logger: silent });
    await s2.open();
    assert.deepEqual(await all(s2), records);
    assert.deepEqual(await s2.getSetting('runtime'), { strategy: 'weighted' });
    assert.deepEqual(await s2.getSetting('sources'), [{ name: 'a' }]);
    await s2.close();
  });

  it('streams and bulk-inserts past one batch, all or nothing across batches', async () => {
    const s = fresh();
    await s.open();
    const many = Array.from({ length: 2500 }, (_, i) => rec({ host: `h${i}.example`, username: `u${i}` }));
    await s.insertMany(many);
    const loaded = await all(s);
    assert.deepEqual(
      loaded.map((r) => r.id),
      many.map((r) => r.id),
      'creation order over three read batches',
    );
    assert.equal(loaded[2400]?.username, 'u2400');
    const late = Array.from({ length: 1500 }, (_, i) => rec({ host: `late${i}.example` }));
    late.push(rec({ host: 'h7.example', username: 'u7' })); // taken, in the second batch
    await assert.rejects(s.insertMany(late), { code: 'PROXY_ALREADY_EXISTS' });
    assert.equal(await s.count(), 2500, 'the first batch of the refused call was rolled back');
    await s.close();
  });

  it('is chosen by openStore when ROTA_DATABASE_URL is set, which then requires ROTA_SECRET_KEY', async () => {
    const env = { ROTA_DATABASE_URL: url, ROTA_SECRET_KEY: key.toString('hex') };
    assert.equal((await openStore(loadConfig(env), silent)).backend, 'postgres');
    assert.throws(
      () => loadConfig({ ROTA_DATABASE_URL: url }),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        assert.deepEqual(
          e.problems.filter((p) => p.includes('ROTA_SECRET_KEY')),
          ['ROTA_SECRET_KEY: required when ROTA_DATABASE_URL is set (credentials are encrypted with it)'],
        );
        return true;
      },
    );
  });

  it('fails open() with STORAGE_UNAVAILABLE, quickly, when nothing listens', async () => {
    const s = new PostgresStore({
      url: 'postgres://postgres@127.0.0.1:1/none',
      secretKey: key,
      logger: silent,
    });
    const started = Date.now();
    await assert.rejects(s.open(), (e: unknown) => e instanceof StorageUnavailableError && isUnavailable(e));
    assert.ok(Date.now() - started < 3000);
    assert.equal(s.connected, false);
    const missing = new PostgresStore({ url: server.urlFor('no_such_db'), secretKey: key, logger: silent });
    await assert.rejects(missing.open(), (e: unknown) => {
      assert.ok(e instanceof StorageUnavailableError);
      assert.match(e.message, /database "no_such_db" does not exist/);
      return true;
    });
  });

  it('rolls back a failing migration and refuses a schema newer than it knows', async () => {
    const migrateUrl = await server.createDatabase('migrations');
    const client = new pg.Client({ connectionString: migrateUrl });
    await client.connect();
    try {
      const broken = [
        ...PG_MIGRATIONS,
        {
          version: PG_MIGRATIONS.length + 1,
          description: 'half-done',
          sql: 'CREATE TABLE half (x int); SELECT 1/0',
        },
      ];
      await assert.rejects(migratePg(client, broken), MigrationError);
      const tables = await client.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'");
      assert.deepEqual(tables.rows, [], 'nothing of the failed run is kept, not even the version table');
      assert.deepEqual(await migratePg(client), { from: 0, to: PG_MIGRATIONS.length });
      assert.deepEqual(await migratePg(client), { from: PG_MIGRATIONS.length, to: PG_MIGRATIONS.length });
      await client.query('INSERT INTO rota_schema_version (version, description) VALUES (99, $1)', [
        'future',
      ]);
      await assert.rejects(migratePg(client), /schema is version 99 .* upgrade Rota/);
    } finally {
      await client.end();
    }
  });
});
