import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RotaError } from '../errors/rota-error.ts';
import { MemoryStore } from '../store/memory.ts';
import { countryMoves } from './entry.ts';
import { safeLabel, safeUsernamePart } from './label.ts';
import { EXIT_REFRESH_MS, Pool } from './pool.ts';
import type { ProxyRecord } from './types.ts';

async function pool(): Promise<Pool> {
  const store = new MemoryStore();
  await store.open();
  return new Pool(store, () => Date.now());
}

test('update changes weight, country, tags, label and credentials in place; the entry and id stay', async () => {
  const p = await pool();
  const e = await p.add({ url: 'http://10.0.0.1:3128', username: 'alice', password: 'pw1' });
  const heard: [ProxyRecord, string | null][] = [];
  p.listen({ updated: (_e, before, country) => heard.push([before, country]) });
  const moves = countryMoves.count;
  const out = await p.update(e.record.id, {
    weight: 4,
    country: 'de',
    tags: ['a'],
    label: 'mine',
    password: 'pw2',
  });
  assert.equal(out, e, 'the same entry');
  assert.deepEqual(
    [
      e.record.weight,
      e.record.country,
      [...e.record.tags],
      e.record.label,
      e.record.username,
      e.record.password,
    ],
    [4, 'DE', ['a'], 'mine', 'alice', 'pw2'],
  );
  assert.equal(e.country, 'DE');
  assert.equal(countryMoves.count, moves + 1, 'indexes by country are told');
  assert.equal(heard.length, 1);
  assert.equal(heard[0]?.[0].password, 'pw1');
  assert.equal(heard[0]?.[1], null);
  await p.update(e.record.id, { country: null, label: null });
  assert.deepEqual([e.record.country, e.record.label, e.country], [null, null, null]);
  assert.equal(await p.update('no-such-id', { weight: 2 }), null);
});

test('update refuses a username that another member of the same URL has (409), changing nothing', async () => {
  const p = await pool();
  await p.add({ url: 'http://10.0.0.1:3128', username: 'a', password: 'x' });
  const b = await p.add({ url: 'http://10.0.0.1:3128', username: 'b', password: 'y' });
  await assert.rejects(p.update(b.record.id, { username: 'a' }), (err: unknown) => {
    assert.ok(err instanceof RotaError);
    assert.equal(err.code, 'PROXY_ALREADY_EXISTS');
    return true;
  });
  assert.equal(b.record.username, 'b');
  await p.update(b.record.id, { username: 'c' });
  assert.equal(p.knows({ ...b.record, username: 'b' }), false, 'the old identity is free');
  assert.equal(p.knows(b.record), true);
});

test('setExit: the exit country is the effective one unless a country is declared; shared exits are counted', async () => {
  const p = await pool();
  const a = await p.add({ url: 'http://10.0.0.1:3128' });
  const b = await p.add({ url: 'http://10.0.0.2:3128', country: 'FR' });
  const now = Date.now();
  await p.setExit(a, { ip: '198.51.100.9', seenAt: now, country: 'NL', asn: null });
  await p.setExit(b, { ip: '198.51.100.9', seenAt: now, country: 'NL', asn: null });
  assert.equal(a.country, 'NL');
  assert.equal(b.country, 'FR', 'a declared country wins');
  assert.equal(p.exitSharedWith(a), 1);
  assert.deepEqual([...p.exits.at('198.51.100.9')], [a, b]);
  await p.setExit(b, { ip: '198.51.100.10', seenAt: now, country: 'NL', asn: null });
  assert.equal(p.exitSharedWith(a), 0);
  await p.remove(a.record.id);
  assert.equal(p.exits.at('198.51.100.9').size, 0);
});

test('setExit writes an unchanged exit again only after EXIT_REFRESH_MS', async () => {
  const store = new MemoryStore();
  await store.open();
  const p = new Pool(store, () => Date.now());
  const e = await p.add({ url: 'http://10.0.0.1:3128' });
  let writes = 0;
  const setExit = store.setExit.bind(store);
  store.setExit = (id, exit) => {
    writes++;
    return setExit(id, exit);
  };
  const exit = { ip: '192.0.2.1', seenAt: 1_000, country: null, asn: null };
  await p.setExit(e, exit);
  await p.setExit(e, { ...exit, seenAt: 2_000 });
  assert.equal(writes, 1);
  assert.equal(e.exit?.seenAt, 1_000);
  await p.setExit(e, { ...exit, seenAt: 1_000 + EXIT_REFRESH_MS });
  assert.equal(writes, 2);
  assert.equal((await store.get(e.record.id))?.exit?.seenAt, 1_000 + EXIT_REFRESH_MS);
});

test('safe labels: the words before a session-, password- or id-looking one; never a password', () => {
  assert.equal(
    safeUsernamePart('customer-acme-zone-res-session-abc123-country-de'),
    'customer-acme-zone-res',
  );
  assert.equal(safeUsernamePart('user-acme-sessid-{session}'), 'user-acme');
  assert.equal(safeUsernamePart('alice'), 'al…', 'a bare account name is not shown');
  for (const short of ['a', 'ab', 'x1']) assert.equal(safeUsernamePart(short), null, `${short}: never whole`);
  assert.equal(safeUsernamePart('bob'), 'bo…', 'a name of three: two of it, as for any longer one');
  assert.equal(safeUsernamePart('u_acme_7f3a9c2b1d'), 'u_acme');
  assert.equal(safeUsernamePart('a8f3k2m9x1'), null, 'a generated id alone shows nothing');
  assert.equal(safeUsernamePart(`${'x'.repeat(100)}-session-1`)?.length, 64);
  const base = { id: 'i', protocol: 'http', host: 'h', port: 1, weight: 1, country: null, tags: [] } as const;
  const r = {
    ...base,
    createdAt: 0,
    updatedAt: 0,
    username: 'team-a-session-1',
    password: 'team-a-session-1',
  };
  assert.equal(safeLabel(r), 'team-a');
  assert.equal(safeLabel({ ...r, label: 'Mine' }), 'Mine');
  assert.equal(safeLabel({ ...r, username: null, usernameTemplate: 'gw-zone-{session}' }), 'gw-zone');
  assert.equal(safeLabel({ ...r, username: null }), null);
});

test('another instance’s update, exit, add and removal reach this pool from the shared store, told as remote', async () => {
  const store = new MemoryStore();
  await store.open();
  const here = new Pool(store, () => Date.now());
  const there = new Pool(store, () => Date.now());
  const a = await there.add({ url: 'http://10.0.0.1:3128', username: 'alice', password: 'pw1' });
  assert.equal(await here.applyRemoteAdd(a.record.id), true);
  const mine = here.get(a.record.id);
  assert.ok(mine);
  const heard: { what: string; remote: boolean; before?: string | null }[] = [];
  here.listen({
    added: () => heard.push({ what: 'added', remote: here.applyingRemote }),
    updated: (_e, before) =>
      heard.push({ what: 'updated', remote: here.applyingRemote, before: before.username }),
    removed: () => heard.push({ what: 'removed', remote: here.applyingRemote }),
  });
  await there.update(a.record.id, { username: 'bob', country: 'de', weight: 3 });
  await there.setExit(a, { ip: '198.51.100.7', seenAt: Date.now(), country: 'NL', asn: 64500 });
  await here.applyRemoteUpdate(a.record.id);
  assert.deepEqual([mine.record.username, mine.record.weight, mine.country], ['bob', 3, 'DE']);
  assert.equal(mine.exit?.ip, '198.51.100.7');
  assert.deepEqual([...here.exits.at('198.51.100.7')], [mine], 'the exit index follows');
  assert.equal(here.knows({ ...mine.record, username: 'alice' }), false, 'the old identity is free here too');
  assert.equal(here.knows(mine.record), true);
  assert.equal(here.applyingRemote, false);
  await here.applyRemoteUpdate('no-such-id'); // a member gone meanwhile: nothing to do
  const b = await there.add({ url: 'http://10.0.0.2:3128' });
  await here.applyRemoteAdd(b.record.id);
  assert.equal(await here.applyRemoteAdd(b.record.id), true, 'a second notice adds nothing');
  await there.remove(b.record.id);
  here.applyRemoteRemove(b.record.id);
  assert.equal(here.get(b.record.id), undefined);
  assert.equal(await here.applyRemoteAdd(b.record.id), false, 'gone from the store: not added');
  assert.deepEqual(heard, [
    { what: 'updated', remote: true, before: 'alice' },
    { what: 'added', remote: true },
    { what: 'removed', remote: true },
  ]);
  assert.deepEqual(
    here.all().map((e) => e.record.id),
    [a.record.id],
  );
});

test('changes of one member at once both land: each builds on the one before', async () => {
  const p = await pool();
  const e = await p.add({ url: 'http://10.0.0.1:3128', username: 'u', password: 'old' });
  await Promise.all([
    p.update(e.record.id, { password: 'NEW' }),
    p.update(e.record.id, { weight: 7 }),
    p.update(e.record.id, { tags: ['t'] }),
  ]);
  assert.deepEqual([e.record.password, e.record.weight, [...e.record.tags]], ['NEW', 7, ['t']]);
  await p.add({ url: 'http://10.0.0.1:3128', username: 'taken', password: 'x' });
  await assert.rejects(
    Promise.all([p.update(e.record.id, { username: 'taken' }), p.update(e.record.id, { weight: 2 })]),
  );
  assert.equal(e.record.weight, 2, 'a change that failed does not stop the next');
});

test('a member made a gateway by a change forgets the exit it had as a static proxy', async () => {
  const p = await pool();
  const a = await p.add({ url: 'http://10.0.0.1:3128', username: 'acct', password: 'x' });
  const b = await p.add({ url: 'http://10.0.0.2:3128' });
  const now = Date.now();
  await p.setExit(a, { ip: '198.51.100.20', seenAt: now, country: 'NL', asn: null });
  await p.setExit(b, { ip: '198.51.100.20', seenAt: now, country: 'NL', asn: null });
  assert.equal(p.exitSharedWith(b), 1);
  await p.update(a.record.id, { username_template: 'acct-session-{session}' });
  assert.equal(a.exit, null);
  assert.equal(a.country, null, 'no learned country either');
  assert.equal(p.exitSharedWith(b), 0, 'a ban on b no longer reaches the gateway');
});

test('gateways on one provider endpoint are told apart by their templates (zones), as entries by username', async () => {
  const p = await pool();
  const url = 'http://10.0.0.9:7777';
  await p.add({ url, username_template: 'acme-zone-res-session-{session}', password: 'x' });
  await p.add({ url, username_template: 'acme-zone-isp-session-{session}', password: 'x' });
  await p.add({ url });
  await assert.rejects(p.add({ url, username_template: 'acme-zone-res-session-{session}', password: 'y' }), {
    code: 'PROXY_ALREADY_EXISTS',
  });
  const isp = p.all()[1];
  assert.ok(isp);
  await assert.rejects(p.update(isp.record.id, { username_template: 'acme-zone-res-session-{session}' }), {
    code: 'PROXY_ALREADY_EXISTS',
  });
  assert.equal(p.size, 3);
});

test('a username that cannot be opened leaves its entry without a label, never failing the list', () => {
  const damaged = {
    id: 'd',
    protocol: 'http',
    host: '10.0.0.1',
    port: 1,
    weight: 1,
    country: null,
    tags: [],
    createdAt: 0,
    updatedAt: 0,
    hasCredentials: true,
    get username(): string {
      throw new Error('cannot decrypt');
    },
    password: null,
  } as unknown as ProxyRecord;
  assert.equal(safeLabel(damaged), null);
});
