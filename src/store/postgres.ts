/**
 * The PostgreSQL store, for several Rota instances sharing one pool (ROTA_DATABASE_URL). Same contract as
 * memory and SQLite: a method resolves only after COMMIT, so an acknowledged write is never lost.
 * Credentials are sealed with ROTA_SECRET_KEY (required here: no key file can be shared between hosts).
 * When PostgreSQL is unreachable, every call rejects with STORAGE_UNAVAILABLE within a bounded time and
 * `connected` turns false until a probe sees it answer again; the pool in memory keeps serving reads.
 */
import type { Buffer } from 'node:buffer';
import pg from 'pg';
import type { Logger } from 'pino';
import type { ExitIdentity, ProxyRecord } from '../pool/types.ts';
import { CredentialCipher, openText, StorageKeyError, sealText } from './crypto.ts';
import { isUnavailable, isUniqueViolation, StorageUnavailableError } from './postgres-errors.ts';
import { ReachabilityProbe } from './postgres-probe.ts';
import {
  COLUMNS,
  INSERT_COLUMNS,
  insertParams,
  type ProxyRow,
  SET_EXIT_SQL,
  toRecord,
  UPDATE_SQL,
  valuesList,
} from './postgres-rows.ts';
import { migratePg } from './postgres-schema.ts';
import { exitValues, updateValues } from './rows.ts';
import { DuplicateProxyError, type ProxyStore } from './types.ts';

// Rows are read in bounded batches by key (seq), so no connection stays checked out while the caller
// awaits between rows, and a pool of 100,000 proxies is never held in memory twice.
const READ_BATCH = 1000;
// 15 parameters a row: 1000 rows stay far below PostgreSQL's 65,535 parameters per statement.
const WRITE_BATCH = 1000;

export interface PostgresStoreOptions {
  /** postgres://user:password@host:port/database */
  readonly url: string;
  /** ROTA_SECRET_KEY; required (null fails open() with StorageKeyError). */
  readonly secretKey: Buffer | null;
  readonly logger: Logger;
  /** Connections at most (default 10). */
  readonly poolSize?: number;
  /** To open a connection (default 3000 ms). */
  readonly connectTimeoutMs?: number;
  /** statement_timeout on the server; the client gives up 1 s later (default 5000 ms). */
  readonly statementTimeoutMs?: number;
  /** How often `connected` is re-checked with SELECT 1 (default 1000 ms). */
  readonly probeIntervalMs?: number;
  /** How long that SELECT 1 (and its connection) may take before the database counts as gone (2000 ms). */
  readonly probeTimeoutMs?: number;
}

type Open = { readonly kind: 'open'; pool: pg.Pool; cipher: CredentialCipher; probe: ReachabilityProbe };
type State = { readonly kind: 'closed' } | Readonly<Open>;

/** host:port/database: names the database in messages without its password. */
export function describeDatabase(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return 'the database at ROTA_DATABASE_URL';
  }
}

export class PostgresStore implements ProxyStore {
  readonly backend = 'postgres' as const;
  private state: State = { kind: 'closed' };
  private reachable = false;
  private readonly options: PostgresStoreOptions;
  private readonly where: string;

  constructor(options: PostgresStoreOptions) {
    this.options = options;
    this.where = describeDatabase(options.url);
  }

  /** Open, and PostgreSQL answered the last probe (or the last write). */
  get connected(): boolean {
    return this.state.kind === 'open' && this.reachable;
  }

  async open(): Promise<void> {
    if (this.state.kind === 'open') return;
    const { secretKey } = this.options;
    if (secretKey === null) {
      throw new StorageKeyError('ROTA_SECRET_KEY is required with ROTA_DATABASE_URL (PostgreSQL storage)');
    }
    const cipher = new CredentialCipher(secretKey);
    await this.prepare(cipher);
    const pool = this.createPool();
    const probe = new ReachabilityProbe({
      url: this.options.url,
      intervalMs: this.options.probeIntervalMs ?? 1000,
      timeoutMs: this.options.probeTimeoutMs ?? 2000,
      onChange: (up) => this.onReachability(up),
    });
    this.reachable = true;
    this.state = { kind: 'open', pool, cipher, probe };
    probe.start();
  }

  async *loadPages(): AsyncIterable<readonly ProxyRecord[]> {
    let after = '0';
    for (;;) {
      const { pool, cipher } = this.opened();
      const { rows } = await this.guard(
        pool.query<ProxyRow>(`SELECT ${COLUMNS} FROM rota_proxies WHERE seq > $1 ORDER BY seq LIMIT $2`, [
          after,
          READ_BATCH,
        ]),
      );
      if (rows.length > 0) yield rows.map((row) => toRecord(row, cipher, true));
      const last = rows.at(-1);
      if (last === undefined || rows.length < READ_BATCH) return;
      after = last.seq;
    }
  }

  async get(id: string): Promise<ProxyRecord | null> {
    const { pool, cipher } = this.opened();
    const { rows } = await this.guard(
      pool.query<ProxyRow>(`SELECT ${COLUMNS} FROM rota_proxies WHERE id = $1`, [id]),
    );
    return rows[0] ? toRecord(rows[0], cipher) : null;
  }

  async count(): Promise<number> {
    const { pool } = this.opened();
    const { rows } = await this.guard(pool.query<{ n: string }>('SELECT COUNT(*) AS n FROM rota_proxies'));
    return Number(rows[0]?.n ?? 0);
  }

  async insert(record: ProxyRecord): Promise<void> {
    await this.insertMany([record]);
  }

  /** All or nothing, in one transaction: a taken identity or id anywhere rejects the whole call. */
  async insertMany(records: readonly ProxyRecord[]): Promise<void> {
    if (records.length === 0) return;
    const { pool, cipher } = this.opened();
    const client = await this.guard(pool.connect());
    let broken: Error | undefined;
    // A connection lost between two statements is reported by the next one; unheard, it would crash.
    const lost = (e: Error) => {
      broken = e;
    };
    client.on('error', lost);
    try {
      if (records.length > WRITE_BATCH) await client.query('BEGIN');
      for (let i = 0; i < records.length; i += WRITE_BATCH) {
        const chunk = records.slice(i, i + WRITE_BATCH);
        await client.query(
          `INSERT INTO rota_proxies (${INSERT_COLUMNS}) VALUES ${valuesList(chunk.length)}`,
          chunk.flatMap((r) => insertParams(r, cipher)),
        );
      }
      if (records.length > WRITE_BATCH) await client.query('COMMIT');
    } catch (e) {
      if (isUnavailable(e)) broken = e as Error;
      else if (records.length > WRITE_BATCH) await client.query('ROLLBACK').catch(() => {});
      if (isUniqueViolation(e)) throw new DuplicateProxyError();
      throw this.fault(e);
    } finally {
      // A connection that failed is destroyed rather than handed to the next caller.
      client.off('error', lost);
      client.release(broken);
    }
  }

  async remove(id: string): Promise<boolean> {
    const { pool } = this.opened();
    const res = await this.guard(pool.query('DELETE FROM rota_proxies WHERE id = $1', [id]));
    return (res.rowCount ?? 0) > 0;
  }

  async update(r: ProxyRecord): Promise<boolean> {
    const { pool, cipher } = this.opened();
    try {
      const res = await this.guard(pool.query(UPDATE_SQL, [...updateValues(r, cipher), r.id]));
      return (res.rowCount ?? 0) > 0;
    } catch (e) {
      if (isUniqueViolation(e)) throw new DuplicateProxyError();
      throw e;
    }
  }

  async setExit(id: string, exit: ExitIdentity | null): Promise<void> {
    const { pool } = this.opened();
    await this.guard(pool.query(SET_EXIT_SQL, [...exitValues(exit), id]));
  }

  async getSetting(key: string): Promise<unknown> {
    const { pool } = this.opened();
    const { rows } = await this.guard(
      pool.query<{ value: string }>('SELECT value FROM rota_settings WHERE key = $1', [key]),
    );
    return rows[0] === undefined ? null : JSON.parse(rows[0].value);
  }

  async putSetting(key: string, value: unknown): Promise<void> {
    const { pool } = this.opened();
    await this.guard(
      pool.query(
        'INSERT INTO rota_settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
        [key, JSON.stringify(value) ?? 'null'],
      ),
    );
  }

  async addSetting(key: string, value: unknown): Promise<boolean> {
    const { pool } = this.opened();
    const { rowCount } = await this.guard(
      pool.query('INSERT INTO rota_settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [
        key,
        JSON.stringify(value) ?? 'null',
      ]),
    );
    return rowCount === 1;
  }

  sealSecret(plain: string, context: string): string {
    return sealText(this.opened().cipher, plain, context);
  }

  openSecret(sealed: string, context: string): string {
    return openText(this.opened().cipher, sealed, context);
  }

  async close(): Promise<void> {
    if (this.state.kind !== 'open') return;
    const { pool, probe } = this.state;
    this.state = { kind: 'closed' };
    this.reachable = false;
    await probe.stop();
    await pool.end();
  }

  private get connectTimeoutMs(): number {
    return this.options.connectTimeoutMs ?? 3000;
  }

  private createPool(): pg.Pool {
    const statementTimeout = this.options.statementTimeoutMs ?? 5000;
    const pool = new pg.Pool({
      connectionString: this.options.url,
      max: this.options.poolSize ?? 10,
      connectionTimeoutMillis: this.connectTimeoutMs,
      idleTimeoutMillis: 10_000,
      statement_timeout: statementTimeout,
      // The server cancels at statement_timeout (and rolls back); this only catches a silent network.
      query_timeout: statementTimeout + 1000,
      idle_in_transaction_session_timeout: 30_000,
      keepAlive: true,
      application_name: 'rota',
    });
    // An idle connection lost (server restart): the pool drops it; the probe decides about `connected`.
    pool.on('error', (err) => this.options.logger.debug({ err }, 'idle PostgreSQL connection lost'));
    return pool;
  }

  /** Migrates and checks the key on a connection of its own, without the pool's short query timeout. */
  private async prepare(cipher: CredentialCipher): Promise<void> {
    const client = new pg.Client({
      connectionString: this.options.url,
      connectionTimeoutMillis: this.connectTimeoutMs,
      application_name: 'rota-migrate',
    });
    client.on('error', () => {}); // reported by the failing query
    try {
      await client.connect();
      const result = await migratePg(client);
      if (result.from !== result.to) {
        this.options.logger.info({ ...result, database: this.where }, 'PostgreSQL schema migrated');
      }
      await this.unlock(client, cipher);
    } catch (e) {
      // A refused login or a missing database stops start-up the same way, with the server's reason.
      throw isUnavailable(e) || e instanceof pg.DatabaseError ? new StorageUnavailableError(e) : e;
    } finally {
      await client.end().catch(() => {});
    }
  }

  /** Records the key's fingerprint on first use; refuses a different key before anything is read. */
  private async unlock(client: pg.Client, cipher: CredentialCipher): Promise<void> {
    await client.query(
      "INSERT INTO rota_meta (key, value) VALUES ('key_fingerprint', $1) ON CONFLICT (key) DO NOTHING",
      [cipher.fingerprint],
    );
    const { rows } = await client.query<{ value: Buffer }>(
      "SELECT value FROM rota_meta WHERE key = 'key_fingerprint'",
    );
    if (!rows[0] || !cipher.matches(rows[0].value)) {
      throw new StorageKeyError(
        `ROTA_SECRET_KEY does not match the key the database ${this.where} was created with, so its ` +
          'credentials cannot be decrypted: start with the original key',
      );
    }
  }

  private opened(): Open {
    if (this.state.kind !== 'open') throw new Error('the PostgreSQL store is not open');
    return this.state;
  }

  private async guard<T>(work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (e) {
      throw this.fault(e);
    }
  }

  /** An unreachable database becomes StorageUnavailableError and flips `connected` at once. */
  private fault(e: unknown): unknown {
    if (!isUnavailable(e)) return e;
    if (this.state.kind === 'open') this.state.probe.markDown();
    return e instanceof StorageUnavailableError ? e : new StorageUnavailableError(e);
  }

  private onReachability(up: boolean): void {
    if (this.state.kind !== 'open') return;
    this.reachable = up;
    if (up) this.options.logger.info({ database: this.where }, 'PostgreSQL is reachable again');
    else {
      this.options.logger.warn(
        { database: this.where },
        'PostgreSQL is unreachable: writes answer 503 STORAGE_UNAVAILABLE until it is back',
      );
    }
  }
}
