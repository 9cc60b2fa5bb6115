/**
 * The part of the ProxyStore contract added with PATCH and exit identity (issue 36): update() rewrites
 * what a PATCH may change, refusing a taken identity; setExit() keeps the exit apart from it; label and
 * templates (sealed like passwords) survive a reload. Run here for memory and SQLite, and for PostgreSQL
 * by postgres.test.ts.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, describe, it } from 'node:test';
import pino from 'pino';
import { rec } from '../../test/helpers/store.ts';
import type { ProxyRecord } from '../pool/types.ts';
import { MemoryStore } from './memory.ts';
import { SqliteStore } from './sqlite.ts';
import { DuplicateProxyError, type ProxyStore } from './types.ts';

async function byId(store: ProxyStore): Promise<Map<string, ProxyRecord>> {
  const out = new Map<string, ProxyRecord>();
  for await (const page of store.loadPages()) for (const r of page) out.set(r.id, r);
  return out;
}

export function storeUpdateContract(name: string, make: () => ProxyStore): void {
  describe(`ProxyStore update contract: ${name}`, () => {
    const made: ProxyStore[] = [];
    const opened = async () => {
      const s = make();
      made.push(s);
      await s.open();
      return s;
    };
    afterEach(async () => {
      for (const s of made.splice(0)) await s.close();
    });

    it('keeps label and templates, and reads them back after a reload and through get()', async () => {
      const s = await opened();
      const r = rec({
        label: 'zone-res',
        usernameTemplate: 'cust-acme-session-{session}',
        passwordTemplate: 'pw-{rand}',
      });
      await s.insert(r);
      for (const got of [(await byId(s)).get(r.id), await s.get(r.id)]) {
        assert.equal(got?.label, 'zone-res');
        assert.equal(got?.usernameTemplate, 'cust-acme-session-{session}');
        assert.equal(got?.passwordTemplate, 'pw-{rand}');
        assert.equal(got?.exit ?? null, null);
      }
    });

    it('update() rewrites credentials, weight, country, tags, label and templates; false for an unknown id', async () => {
      const s = await opened();
      const r = rec({ username: 'alice', password: 'old-pw', label: 'a' });
      await s.insert(r);
      const changed: ProxyRecord = {
        ...r,
        username: 'bob',
        password: 'new-pw',
        weight: 3,
        country: 'DE',
        tags: ['x'],
        label: null,
        usernameTemplate: 'bob-{session}',
        passwordTemplate: null,
        updatedAt: r.updatedAt + 5,
      };
      assert.equal(await s.update(changed), true);
      const got = await s.get(r.id);
      assert.deepEqual(
        [got?.username, got?.password, got?.weight, got?.country, [...(got?.tags ?? [])], got?.label],
        ['bob', 'new-pw', 3, 'DE', ['x'], null],
      );
      assert.equal(got?.usernameTemplate, 'bob-{session}');
      assert.equal(got?.updatedAt, r.updatedAt + 5);
      assert.equal(got?.createdAt, r.createdAt);
      assert.equal(await s.update({ ...changed, id: randomUUID() }), false);
    });

    it("update() refuses a username that makes another record's identity, and frees the old one", async () => {
      const s = await opened();
      const a = rec({ username: 'a' });
      const b = rec({ username: 'b' });
      await s.insertMany([a, b]);
      await assert.rejects(s.update({ ...b, username: 'a' }), DuplicateProxyError);
      assert.equal((await s.get(b.id))?.username, 'b', 'a refused update changes nothing');
      assert.equal(await s.update({ ...b, username: 'c' }), true);
      await s.insert(rec({ username: 'b' }));
      assert.equal(await s.count(), 3);
    });

    it('setExit() keeps the exit beside the record; update() leaves it; null forgets it', async () => {
      const s = await opened();
      const r = rec({ username: 'u', password: 'p' });
      await s.insert(r);
      const exit = { ip: '203.0.113.7', seenAt: 1_700_000_123_456, country: 'NL', asn: 64500 };
      await s.setExit(r.id, exit);
      await s.setExit(randomUUID(), exit); // unknown: nothing
      assert.deepEqual((await s.get(r.id))?.exit, exit);
      await s.update({ ...r, weight: 2 });
      assert.deepEqual((await byId(s)).get(r.id)?.exit, exit);
      await s.setExit(r.id, null);
      assert.equal((await s.get(r.id))?.exit ?? null, null);
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'rota-contract-update-'));
after(() => rmSync(dir, { recursive: true, force: true }));

if (import.meta.main) {
  storeUpdateContract('memory', () => new MemoryStore());
  storeUpdateContract(
    'sqlite',
    () =>
      new SqliteStore({
        path: join(dir, `${randomUUID()}.db`),
        secretKey: null,
        logger: pino({ level: 'silent' }),
      }),
  );

  it('SQLite never writes a template in clear', async () => {
    const path = join(dir, `${randomUUID()}.db`);
    const s = new SqliteStore({ path, secretKey: null, logger: pino({ level: 'silent' }) });
    await s.open();
    await s.insert(rec({ usernameTemplate: 'Tmpl-Secret-{session}', passwordTemplate: 'Tmpl-Pw-{rand}' }));
    await s.close();
    const bytes = readFileSync(path).toString('latin1');
    assert.equal(bytes.includes('Tmpl-Secret'), false);
    assert.equal(bytes.includes('Tmpl-Pw'), false);
  });
}
