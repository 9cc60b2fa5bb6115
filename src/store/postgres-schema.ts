/**
 * The PostgreSQL schema and its migrations. Several Rota instances may start at the same moment against
 * one database, so migrating takes a transaction-level advisory lock first: one instance applies the
 * pending steps, the others wait, then find nothing left to do. Applied versions are rows of
 * rota_schema_version; DDL is transactional here, so a failing step leaves the database as it was.
 */
import type pg from 'pg';
import { MigrationError, type MigrationResult } from './migrations.ts';

export interface PgMigration {
  /** 1, 2, 3... in order; one row in rota_schema_version once applied. */
  readonly version: number;
  readonly description: string;
  readonly sql: string;
}

/** Append only: a released migration is never edited, a change is a new one. */
export const PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    description: 'proxies, settings and meta tables',
    // Tables carry a rota_ prefix so that the database may be shared with other applications.
    sql: `
      CREATE TABLE rota_proxies (
        seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
        id TEXT PRIMARY KEY,
        protocol TEXT NOT NULL,
        host TEXT NOT NULL,
        port INTEGER NOT NULL,
        username_enc BYTEA,
        password_enc BYTEA,
        identity TEXT NOT NULL UNIQUE,
        weight DOUBLE PRECISION NOT NULL,
        country TEXT,
        tags TEXT NOT NULL DEFAULT '[]',
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
      );
      CREATE TABLE rota_settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
      CREATE TABLE rota_meta (
        key TEXT PRIMARY KEY,
        value BYTEA NOT NULL
      );
    `,
  },
  {
    version: 2,
    description: 'proxy label, gateway templates (sealed) and exit identity',
    sql: `
      ALTER TABLE rota_proxies
        ADD COLUMN label TEXT,
        ADD COLUMN username_template_enc BYTEA,
        ADD COLUMN password_template_enc BYTEA,
        ADD COLUMN exit_ip TEXT,
        ADD COLUMN exit_seen_at BIGINT,
        ADD COLUMN exit_country TEXT,
        ADD COLUMN exit_asn BIGINT;
    `,
  },
];

/** Any constant will do as long as no other application in the database uses it: "rota" in ASCII. */
export const MIGRATION_LOCK = 0x726f7461;

const VERSION_TABLE = `
  CREATE TABLE IF NOT EXISTS rota_schema_version (
    version INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
  )`;

/**
 * Brings the schema to the newest version in one transaction. pg_advisory_xact_lock (the transaction
 * form of pg_advisory_lock) is released by COMMIT, ROLLBACK or a lost connection, so no failure path can
 * leave it held. Waiting for another instance's migration is not cut short by statement_timeout.
 */
export async function migratePg(
  client: pg.ClientBase,
  migrations: readonly PgMigration[] = PG_MIGRATIONS,
): Promise<MigrationResult> {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new MigrationError(`migration #${i} has version ${m.version}`);
  });
  const latest = migrations.length;
  await client.query('BEGIN');
  try {
    await client.query("SET LOCAL statement_timeout = '120s'");
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query(VERSION_TABLE);
    const res = await client.query<{ v: number }>(
      'SELECT COALESCE(MAX(version), 0)::int AS v FROM rota_schema_version',
    );
    const from = res.rows[0]?.v ?? 0;
    if (from > latest) {
      throw new MigrationError(
        `the database schema is version ${from} but this Rota knows only up to ${latest}: upgrade Rota`,
      );
    }
    for (const m of migrations.slice(from)) await apply(client, m);
    await client.query('COMMIT');
    return { from, to: latest };
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  }
}

async function apply(client: pg.ClientBase, m: PgMigration): Promise<void> {
  try {
    await client.query(m.sql);
  } catch (e) {
    throw new MigrationError(`migration ${m.version} (${m.description}) failed: ${(e as Error).message}`, {
      cause: e,
    });
  }
  await client.query('INSERT INTO rota_schema_version (version, description) VALUES ($1, $2)', [
    m.version,
    m.description,
  ]);
}
