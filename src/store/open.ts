import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { MemoryStore } from './memory.ts';
import type { ProxyStore } from './types.ts';

/**
 * Picks the backend from the config: PostgreSQL when ROTA_DATABASE_URL is set, else SQLite when
 * ROTA_STORAGE_PATH is set, else memory. A backend's driver is loaded only when it is the one chosen
 * (pg and better-sqlite3 cost memory and start-up time in every process that merely imports them).
 */
export async function openStore(config: Config, logger: Logger): Promise<ProxyStore> {
  if (config.databaseUrl !== null) {
    const { PostgresStore } = await import('./postgres.ts');
    return new PostgresStore({ url: config.databaseUrl, secretKey: config.secretKey, logger });
  }
  if (config.storagePath === null) return new MemoryStore();
  const path = resolve(config.storagePath);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const { SqliteStore } = await import('./sqlite.ts');
  return new SqliteStore({ path, secretKey: config.secretKey, logger });
}
