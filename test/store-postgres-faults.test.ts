/**
 * The PostgreSQL store while its database goes away: stopped at once (pg_ctl stop -m immediate) and frozen
 * (SIGSTOP: connections stay open, nothing answers, the case a TCP timeout would take minutes to see).
 * A write must reject with STORAGE_UNAVAILABLE within a bounded time, `connected` must turn false, and
 * both must recover by themselves once the database is back, with every acknowledged write kept.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import { PostgresStore } from '../src/store/postgres.ts';
import { startPostgres } from './helpers/postgres.ts';
import { rec } from './helpers/store.ts';

const silent = pino({ level: 'silent' });
const key = randomBytes(32);
const server = await startPostgres();
after(() => server.destroy());

/** Resolves once `check()` holds; fails with `what` after `ms`. Returns the time it took. */
async function within(ms: number, what: string, check: () => boolean): Promise<number> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > ms) assert.fail(`${what} not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
  return Date.now() - started;
}

async function timed<T>(work: Promise<T>): Promise<{ ms: number; result: PromiseSettledResult<T> }> {
  const started = Date.now();
  const [result] = await Promise.allSettled([work]);
  return { ms: Date.now() - started, result: result! };
}

function unavailable(result: PromiseSettledResult<unknown>): boolean {
  return result.status === 'rejected' && (result.reason as { code?: unknown }).code === 'STORAGE_UNAVAILABLE';
}

describe('PostgresStore when PostgreSQL goes away', () => {
  it('refuses writes fast, reports not connected, and recovers when the server is back', async (t) => {
    const url = await server.createDatabase('crash');
    const writer = new PostgresStore({ url, secretKey: key, logger: silent });
    const idle = new PostgresStore({ url, secretKey: key, logger: silent });
    await writer.open();
    await idle.open();
    const acked = rec({ username: 'kept', password: 'kept-pw' });
    await writer.insert(acked);
    await writer.putSetting('runtime', { strategy: 'random' });

    await server.kill();
    const refused = rec({ port: 2 });
    const write = await timed(writer.insert(refused));
    assert.ok(unavailable(write.result), `insert rejected with STORAGE_UNAVAILABLE: ${String(write.result)}`);
    assert.ok(write.ms < 3000, `rejected in ${write.ms} ms`);
    assert.ok(unavailable((await timed(writer.putSetting('k', 1))).result), 'putSetting too');
    assert.ok(unavailable((await timed(writer.remove(acked.id))).result), 'remove too');
    assert.equal(writer.connected, false, 'a failed write turns connected false at once');
    const idleDown = await within(3500, 'the probe to see the database gone', () => !idle.connected);

    await server.start();
    await within(4000, 'connected again (writer)', () => writer.connected);
    const idleUp = await within(4000, 'connected again (idle)', () => idle.connected);
    await writer.insert(refused);
    assert.deepEqual(
      (await writer.get(acked.id))?.password,
      'kept-pw',
      'what was acknowledged before the crash is kept',
    );
    assert.equal(await idle.count(), 2, 'the refused write was not half-kept: it went in once, now');
    assert.deepEqual(await idle.getSetting('runtime'), { strategy: 'random' });
    await writer.close();
    await idle.close();
    t.diagnostic(`write refused in ${write.ms} ms; probe saw it down in ${idleDown} ms, up in ${idleUp} ms`);
  });

  it('gives up on a server that no longer answers within its timeouts, not TCP timeouts', async (t) => {
    const url = await server.createDatabase('frozen');
    const s = new PostgresStore({
      url,
      secretKey: key,
      logger: silent,
      statementTimeoutMs: 1000,
      connectTimeoutMs: 1000,
      probeTimeoutMs: 1000,
    });
    await s.open();
    await s.insert(rec({ port: 1 }));
    server.freeze();
    try {
      const write = await timed(s.insert(rec({ port: 2 })));
      assert.ok(unavailable(write.result), `rejected with STORAGE_UNAVAILABLE: ${String(write.result)}`);
      assert.ok(write.ms < 4000, `rejected in ${write.ms} ms`);
      t.diagnostic(`write to a frozen server refused in ${write.ms} ms`);
      assert.equal(s.connected, false);
    } finally {
      server.thaw();
    }
    await within(4000, 'connected after the server thawed', () => s.connected);
    await s.insert(rec({ port: 3 }));
    assert.ok((await s.count()) >= 2);
    await s.close();
  });
});
