import { Buffer } from 'node:buffer';
import { closeSync, existsSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { BulkGate, nextTurn } from '../lib/turns.ts';
import type { ExitIdentity, ProxyRecord } from '../pool/types.ts';
import {
  CredentialCipher,
  describeKeySource,
  openText,
  resolveKey,
  StorageKeyError,
  sealText,
} from './crypto.ts';
import { migrate } from './migrations.ts';
import {
  EXIT_COLUMNS,
  exitValues,
  INSERT_COLUMNS,
  PACKED_COLUMNS,
  type PackedRow,
  ROW_COLUMNS,
  recordFromPacked,
  recordFromRow,
  type SealedRow,
  sealedValues,
  UPDATE_COLUMNS,
  updateValues,
} from './rows.ts';
import { DuplicateProxyError, type ProxyStore } from './types.ts';

type Db = Database.Database;

type Row = SealedRow & { seq: number };
// Rows are read in bounded batches so that no cursor stays open while the caller awaits between rows.
const BATCH = 1000;
// Records sealed between two turns of the event loop in insertMany (~70 µs a record here).
const SEAL_SLICE = 250;
// Time spent inserting rows before the event loop gets a turn. Why by time and this long: the write lock
// is held from BEGIN to COMMIT, and another process on the same file (ROTA_WORKERS, several instances)
// that writes meanwhile waits for it, up to busy_timeout (5 s), its own event loop held. Every turn lets
// this process's other work run inside that span, so fewer, fuller slices keep it short (100,000 rows:
// ~1.7 s of SQL here, ~35 turns).
const INSERT_SLICE_MS = 50;

function prepare(db: Db) {
  return {
    insert: db.prepare(
      `INSERT INTO proxies (seq, ${INSERT_COLUMNS})
       VALUES ((SELECT COALESCE(MAX(seq), 0) + 1 FROM proxies), ${INSERT_COLUMNS.split(',').map(() => '?')})`,
    ),
    update: db.prepare(`UPDATE proxies SET ${UPDATE_COLUMNS.map((c) => `${c} = ?`)} WHERE id = ?`),
    setExit: db.prepare(`UPDATE proxies SET ${EXIT_COLUMNS.map((c) => `${c} = ?`)} WHERE id = ?`),
    get: db.prepare<[string], Row>(`SELECT ${ROW_COLUMNS} FROM proxies WHERE id = ?`),
    page: db
      .prepare<[number, number], PackedRow>(
        `SELECT ${PACKED_COLUMNS} FROM proxies WHERE seq > ? ORDER BY seq LIMIT ?`,
      )
      .raw(true),
    count: db.prepare<[], number>('SELECT COUNT(*) FROM proxies').pluck(),
    remove: db.prepare<[string]>('DELETE FROM proxies WHERE id = ?'),
    getSetting: db.prepare<[string], string>('SELECT value FROM settings WHERE key = ?').pluck(),
    putSetting: db.prepare<[string, string]>(
      'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    ),
    addSetting: db.prepare<[string, string]>(
      'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING',
    ),
  };
}

type Statements = ReturnType<typeof prepare>;

type State =
  | { readonly kind: 'closed' }
  | { readonly kind: 'open'; readonly db: Db; readonly stmts: Statements; readonly cipher: CredentialCipher };

export interface SqliteStoreOptions {
  readonly path: string;
  /** ROTA_SECRET_KEY; null means a key file `<path>.key` beside the database. */
  readonly secretKey: Buffer | null;
  readonly logger: Logger;
  /** ms of inserting between two turns of the event loop in insertMany (INSERT_SLICE_MS; tests: 0). */
  readonly insertSliceMs?: number;
}

/**
 * better-sqlite3 is synchronous: each method's write has reached the disk (WAL, synchronous=FULL) by the
 * time its promise resolves, so an acknowledged write survives kill -9 and power loss.
 */
export class SqliteStore implements ProxyStore {
  readonly backend = 'sqlite' as const;
  private state: State = { kind: 'closed' };
  private readonly options: SqliteStoreOptions;
  /**
   * insertMany's transaction, open across turns of the event loop. Every other statement waits for it
   * first: on this one connection it would run inside that transaction (and be rolled back with it, or
   * see its rows before they are durable).
   */
  readonly #bulk = new BulkGate();

  constructor(options: SqliteStoreOptions) {
    this.options = options;
  }

  get connected(): boolean {
    return this.state.kind === 'open';
  }

  async open(): Promise<void> {
    if (this.state.kind === 'open') return;
    createPrivately(this.options.path);
    const db = new Database(this.options.path);
    try {
      configure(db, this.options.logger);
      migrate(db);
      const cipher = this.unlock(db);
      this.state = { kind: 'open', db, stmts: prepare(db), cipher };
    } catch (e) {
      db.close();
      throw e;
    }
  }

  async *loadPages(): AsyncIterable<readonly ProxyRecord[]> {
    let after = 0;
    for (;;) {
      // all() of a raw statement: one array per row, no cursor left open across the yield.
      const rows = await this.#bulk.whenIdle(() => this.opened().stmts.page.all(after, BATCH));
      const last = rows.at(-1);
      if (last === undefined) return;
      const { cipher } = this.opened();
      yield rows.map((row) => recordFromPacked(row, cipher));
      if (rows.length < BATCH) return;
      after = last[1];
    }
  }

  get(id: string): Promise<ProxyRecord | null> {
    return this.#bulk.whenIdle(() => {
      const { stmts, cipher } = this.opened();
      const row = stmts.get.get(id);
      return row ? recordFromRow(row, cipher) : null;
    });
  }

  count(): Promise<number> {
    return this.#bulk.whenIdle(() => this.opened().stmts.count.get() ?? 0);
  }

  insert(r: ProxyRecord): Promise<void> {
    return this.#bulk.whenIdle(() => {
      const { stmts, cipher } = this.opened();
      insertRow(stmts, sealedValues(r, cipher));
    });
  }

  /**
   * One transaction (one fsync): a constraint failure on any row rolls every row back. Sealing and
   * inserting are done in slices with a turn of the event loop between them: 100,000 rows held it for
   * ~1 s of sealing and ~2 s of SQL in one piece, and every proxied call with it (a client polling
   * /api/v1/ready during a 100,000-line import waited up to 2 s; now the longest wait is the COMMIT).
   */
  async insertMany(records: readonly ProxyRecord[]): Promise<void> {
    const rows: RowValues[] = [];
    for (let i = 0; i < records.length; i++) {
      rows.push(sealedValues(records[i]!, this.opened().cipher));
      if (i % SEAL_SLICE === SEAL_SLICE - 1) await nextTurn();
    }
    await this.#bulk.run(() => this.#insertInSlices(rows));
  }

  async #insertInSlices(rows: readonly RowValues[]): Promise<void> {
    const { db, stmts } = this.opened();
    // IMMEDIATE takes the write lock now: no other process can write in between, so none can make a
    // row of ours a duplicate after we checked.
    db.exec('BEGIN IMMEDIATE');
    try {
      const budget = this.options.insertSliceMs ?? INSERT_SLICE_MS;
      let sliceStart = performance.now();
      for (let i = 0; i < rows.length; i++) {
        insertRow(stmts, rows[i]!);
        if (i % 64 === 63 && performance.now() - sliceStart >= budget) {
          await nextTurn();
          sliceStart = performance.now();
        }
      }
      // COMMIT itself holds the loop (100,000 rows: ~300 ms here, ~130 of them with synchronous=OFF; an
      // fdatasync of the WAL from the thread pool just before it did not shorten it).
      db.exec('COMMIT');
    } catch (e) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw e;
    }
  }

  remove(id: string): Promise<boolean> {
    return this.#bulk.whenIdle(() => this.opened().stmts.remove.run(id).changes > 0);
  }

  update(r: ProxyRecord): Promise<boolean> {
    return this.#bulk.whenIdle(() => {
      const { stmts, cipher } = this.opened();
      try {
        return stmts.update.run(...updateValues(r, cipher), r.id).changes > 0;
      } catch (e) {
        throw uniqueViolation(e) ? new DuplicateProxyError() : e;
      }
    });
  }

  setExit(id: string, exit: ExitIdentity | null): Promise<void> {
    return this.#bulk.whenIdle(() => {
      this.opened().stmts.setExit.run(...exitValues(exit), id);
    });
  }

  getSetting(key: string): Promise<unknown> {
    return this.#bulk.whenIdle(() => {
      const v = this.opened().stmts.getSetting.get(key);
      return v === undefined ? null : (JSON.parse(v) as unknown);
    });
  }

  putSetting(key: string, value: unknown): Promise<void> {
    return this.#bulk.whenIdle(() => {
      this.opened().stmts.putSetting.run(key, JSON.stringify(value) ?? 'null');
    });
  }

  addSetting(key: string, value: unknown): Promise<boolean> {
    return this.#bulk.whenIdle(
      () => this.opened().stmts.addSetting.run(key, JSON.stringify(value) ?? 'null').changes === 1,
    );
  }

  sealSecret(plain: string, context: string): string {
    return sealText(this.opened().cipher, plain, context);
  }

  openSecret(sealed: string, context: string): string {
    return openText(this.opened().cipher, sealed, context);
  }

  close(): Promise<void> {
    return this.#bulk.whenIdle(() => {
      if (this.state.kind !== 'open') return;
      const { db } = this.state;
      this.state = { kind: 'closed' };
      // Folds the WAL into the database file so that a copy of the .db file alone is complete.
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
    });
  }

  private opened(): Extract<State, { kind: 'open' }> {
    if (this.state.kind !== 'open') throw new Error('the SQLite store is not open');
    return this.state;
  }

  /** Finds the key and proves it is the one the database was written with before anything is read. */
  private unlock(db: Db): CredentialCipher {
    const stored = db.prepare<[], Uint8Array>("SELECT value FROM meta WHERE key = 'key_fingerprint'").pluck();
    const fingerprint = stored.get();
    const resolved = resolveKey({
      secretKey: this.options.secretKey,
      keyFilePath: `${this.options.path}.key`,
      mayCreate: fingerprint === undefined,
      logger: this.options.logger,
    });
    const cipher = new CredentialCipher(resolved.key);
    if (fingerprint === undefined) {
      // Another process starting on the same new file may have recorded its key first: compare with that.
      db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('key_fingerprint', ?)").run(
        cipher.fingerprint,
      );
    }
    if (!cipher.matches(stored.get() ?? Buffer.alloc(0))) {
      throw new StorageKeyError(
        `${describeKeySource(resolved.source)} does not match the key the database ${this.options.path} ` +
          'was created with, so its credentials cannot be decrypted: start with the original key',
      );
    }
    return cipher;
  }
}

type RowValues = readonly (string | number | Buffer | null)[];

/** Writes one row; a taken identity or id is DuplicateProxyError. */
function insertRow(stmts: Statements, values: RowValues): void {
  try {
    stmts.insert.run(...values);
  } catch (e) {
    throw uniqueViolation(e) ? new DuplicateProxyError() : e;
  }
}

function uniqueViolation(e: unknown): boolean {
  const code = (e as { code?: unknown }).code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

function configure(db: Db, logger: Logger): void {
  db.pragma('busy_timeout = 5000');
  const mode = String(db.pragma('journal_mode = WAL', { simple: true }));
  if (mode.toLowerCase() !== 'wal') {
    logger.warn({ journal_mode: mode }, 'SQLite could not switch to WAL mode on this file system');
  }
  // FULL syncs the WAL on every commit: NORMAL could lose the last acknowledged writes on power loss.
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
}

/** SQLite gives the -wal and -shm files the database file's mode, so 0600 here covers all three. */
function createPrivately(path: string): void {
  if (existsSync(path)) return;
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
}
