import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { MemoryStore } from './memory.ts';
import { PostgresStore } from './postgres.ts';
import { SqliteStore } from './sqlite.ts';
import type { ProxyStore } from './types.ts';

/**
 * Picks the backend from the config: PostgreSQL when ROTA_DATABASE_URL is set, else SQLite when
 * ROTA_STORAGE_PATH is set, else memory.
 */
export function openStore(config: Config, logger: Logger): ProxyStore {
  if (config.databaseUrl !== null) {
    return new PostgresStore({ url: config.databaseUrl, secretKey: config.secretKey, logger });
  }
  if (config.storagePath === null) return new MemoryStore();
  const path = resolve(config.storagePath);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  return new SqliteStore({ path, secretKey: config.secretKey, logger });
}
