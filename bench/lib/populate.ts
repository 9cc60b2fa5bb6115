import { createHash, randomUUID } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { SqliteStore } from '../../src/store/sqlite.ts';
import { ROOT } from './rota.ts';

/** Files whose change makes a cached database stale (schema, encryption, record shape). */
const STORE_SOURCES = [
  'src/store/sqlite.ts',
  'src/store/migrations.ts',
  'src/store/crypto.ts',
  'src/pool/types.ts',
];

function sourcesHash(): string {
  const h = createHash('sha256');
  for (const f of STORE_SOURCES) h.update(readFileSync(join(ROOT, f)));
  return h.digest('hex').slice(0, 12);
}

/**
 * Writes `count` proxies through Rota's own store module, as `POST proxies` would (each insert is its own
 * durable transaction, about 1 ms here). Every proxy has a username and a password (so start-up decrypts
 * 200,000 fields, as it would for a real commercial pool); they are distinct by username.
 */
async function build(path: string, count: number, log: (m: string) => void): Promise<void> {
  const store = new SqliteStore({ path, secretKey: null, logger: pino({ level: 'silent' }) });
  await store.open();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const now = Date.now();
    await store.insert({
      id: randomUUID(),
      protocol: 'http',
      host: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
      port: 3128,
      username: `user-${i}`,
      password: `pw-${i}-${randomUUID().slice(0, 8)}`,
      weight: 1,
      country: null,
      tags: [],
      createdAt: now,
      updatedAt: now,
    });
    if ((i + 1) % 20_000 === 0)
      log(`    ${i + 1} proxies written (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
  }
  await store.close();
}

/**
 * A fresh copy of a SQLite database holding `count` proxies, for one start-up measurement. The first run
 * builds it once (about 100 s for 100,000) into bench/.work/cache, keyed by the store's sources.
 */
export async function populatedDatabase(workDir: string, count: number, log: (m: string) => void) {
  const cacheDir = join(workDir, 'cache');
  mkdirSync(cacheDir, { recursive: true });
  const cached = join(cacheDir, `pool-${count}-${sourcesHash()}.db`);
  if (!existsSync(cached) || !existsSync(`${cached}.key`)) {
    log(`  writing ${count} proxies into a SQLite database with Rota's store module (cached for later runs)`);
    const tmp = join(cacheDir, `building-${process.pid}.db`);
    for (const f of [tmp, `${tmp}.key`, `${tmp}-wal`, `${tmp}-shm`]) rmSync(f, { force: true });
    await build(tmp, count, log);
    renameSync(`${tmp}.key`, `${cached}.key`);
    renameSync(tmp, cached);
  }
  const dir = join(workDir, 'scale');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, 'rota.db');
  copyFileSync(cached, path);
  copyFileSync(`${cached}.key`, `${path}.key`);
  return path;
}
