import type Database from 'better-sqlite3';
import { RotaError } from '../errors/rota-error.ts';

type Db = Database.Database;

export interface Migration {
  /** 1, 2, 3... in order; stored in PRAGMA user_version once applied. */
  readonly version: number;
  readonly description: string;
  up(db: Db): void;
}

/** Append only: a released migration is never edited, a change is a new one. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'proxies, settings and meta tables',
    up(db) {
      db.exec(`
        CREATE TABLE proxies (
          id TEXT PRIMARY KEY NOT NULL,
          seq INTEGER NOT NULL UNIQUE,
          protocol TEXT NOT NULL,
          host TEXT NOT NULL,
          port INTEGER NOT NULL,
          username_enc BLOB,
          password_enc BLOB,
          identity TEXT NOT NULL UNIQUE,
          weight REAL NOT NULL,
          country TEXT,
          tags TEXT NOT NULL DEFAULT '[]',
          created_at INTEGER NOT NULL,
          updated_at INTEGER NOT NULL
        );
        CREATE TABLE settings (
          key TEXT PRIMARY KEY NOT NULL,
          value TEXT NOT NULL
        );
        CREATE TABLE meta (
          key TEXT PRIMARY KEY NOT NULL,
          value BLOB NOT NULL
        );
      `);
    },
  },
  {
    version: 2,
    description: 'proxy label, gateway templates (sealed) and exit identity',
    up(db) {
      db.exec(`
        ALTER TABLE proxies ADD COLUMN label TEXT;
        ALTER TABLE proxies ADD COLUMN username_template_enc BLOB;
        ALTER TABLE proxies ADD COLUMN password_template_enc BLOB;
        ALTER TABLE proxies ADD COLUMN exit_ip TEXT;
        ALTER TABLE proxies ADD COLUMN exit_seen_at INTEGER;
        ALTER TABLE proxies ADD COLUMN exit_country TEXT;
        ALTER TABLE proxies ADD COLUMN exit_asn INTEGER;
      `);
    },
  },
];

export class MigrationError extends RotaError {
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super('STORAGE_MIGRATION_ERROR', message, opts);
    this.name = 'MigrationError';
  }
}

export interface MigrationResult {
  readonly from: number;
  readonly to: number;
}

function userVersion(db: Db): number {
  return Number(db.pragma('user_version', { simple: true }));
}

/**
 * Brings the schema to the newest version. All pending steps run in one IMMEDIATE transaction, so a
 * failure leaves the database exactly as it was and two processes never migrate at once.
 */
export function migrate(db: Db, migrations: readonly Migration[] = MIGRATIONS): MigrationResult {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new MigrationError(`migration #${i} has version ${m.version}`);
  });
  const latest = migrations.length;
  const run = db.transaction((): MigrationResult => {
    const from = userVersion(db);
    if (from > latest) {
      throw new MigrationError(
        `the database schema is version ${from} but this Rota knows only up to ${latest}: upgrade Rota`,
      );
    }
    for (const m of migrations.slice(from)) {
      try {
        m.up(db);
      } catch (e) {
        throw new MigrationError(`migration ${m.version} (${m.description}) failed: ${(e as Error).message}`);
      }
      db.pragma(`user_version = ${m.version}`);
    }
    return { from, to: latest };
  });
  return run.immediate();
}
