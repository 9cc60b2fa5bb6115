import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeEntry } from '../../test/helpers/rotation.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import { hostKey, SessionTable, type SessionTerms } from './sessions.ts';
import { RoundRobinCursor } from './shared.ts';

function setup(n = 4) {
  const clock = { t: 0 };
  const members = Array.from({ length: n }, (_, i) => makeEntry(`p${i}`));
  const table = new SessionTable({
    now: () => clock.t,
    defaults: { idleMs: 1000, maxMs: 0, maxRequests: 0 },
  });
  const cursor = new RoundRobinCursor();
  const down = new Set<string>();
  const ok = (e: ProxyEntry) => !down.has(e.record.id);
  const pick = (key: string, terms?: SessionTerms, keep?: (e: ProxyEntry) => boolean) =>
    table.select(key, ok, (usable) => cursor.next(members, usable), terms, keep)?.record.id;
  return { clock, members, table, down, pick };
}

describe('session terms', () => {
  it('tells when a session leaves its proxy (term, fault, ended), not when the proxy is only unusable for now', () => {
    const { table, down, pick, members } = setup();
    const left: string[] = [];
    table.onRelease = (key, had, why) => left.push(`${key}:${had.record.id}:${why}`);
    const terms = { idleMs: 60_000, maxMs: 0, maxRequests: 2 };
    const first = pick('s', terms);
    down.add(first ?? '');
    const other = pick('s', terms);
    assert.notEqual(other, first);
    assert.deepEqual(left, [], 'unusable for now (a cap, a cool-down, a retry): not left');
    down.clear();
    pick('s', terms);
    pick('s', terms);
    assert.deepEqual(left, [`s:${other}:term`], 'its term served');
    const now = pick('t', terms);
    table.record(members.find((m) => m.record.id === now) as ProxyEntry, {
      ok: false,
      latencyMs: 1,
      proxyFault: true,
    });
    pick('t', terms);
    assert.equal(left.at(-1), `t:${now}:fault`, 'its proxy failed');
    table.end('t');
    assert.equal(left.length, 3);
    assert.match(left.at(-1) ?? '', /:ended$/);
  });

  it('max_requests: rotates to another proxy every N picks', () => {
    const { pick } = setup();
    const terms = { idleMs: 60_000, maxMs: 0, maxRequests: 3 };
    const seen = Array.from({ length: 9 }, () => pick('s', terms));
    assert.deepEqual(seen.slice(0, 3), [seen[0], seen[0], seen[0]]);
    assert.deepEqual(seen.slice(3, 6), [seen[3], seen[3], seen[3]]);
    assert.notEqual(seen[3], seen[0]);
    assert.notEqual(seen[6], seen[3]);
  });

  it('max_ttl: pinned anew after its age however busy; idle_ttl: forgotten after its idle time', () => {
    const { clock, pick } = setup();
    const terms = { idleMs: 500, maxMs: 2000, maxRequests: 0 };
    const first = pick('s', terms);
    for (let i = 0; i < 4; i++) {
      clock.t += 400;
      assert.equal(pick('s', terms), first, 'busy: kept');
    }
    clock.t += 400;
    assert.notEqual(pick('s', terms), first, 'past max_ttl: another proxy');
    const { clock: c2, pick: p2, table } = setup();
    const a = p2('x', terms);
    c2.t += 600;
    assert.equal(table.list().length, 0, 'idle past its idle_ttl: not listed');
    assert.ok(a !== undefined && p2('x', terms) !== undefined);
  });

  it('scope host: each host has its own pin, so one host moving leaves the others', () => {
    const { pick, down, table } = setup();
    const a = pick(hostKey('s', 'a.test'));
    const b = pick(hostKey('s', 'b.test'));
    assert.ok(a && b);
    // a.test's pin is not usable for a.test (a ban): only that key moves.
    down.add(a);
    const a2 = pick(hostKey('s', 'a.test'));
    assert.notEqual(a2, a);
    down.delete(a);
    assert.equal(pick(hostKey('s', 'b.test')), b, 'b.test kept its pin');
    const listed = table
      .list()
      .map((v) => `${v.id}@${v.host}`)
      .sort();
    assert.deepEqual(listed, ['s@a.test', 's@b.test']);
  });

  it('on_ban keep: a pin that is not eligible only for its cool-down is kept', () => {
    const { pick, down } = setup();
    const first = pick('s');
    assert.ok(first);
    down.add(first);
    const keep = (e: ProxyEntry) => e.record.id === first;
    assert.equal(pick('s', undefined, keep), first);
  });

  it('lists sessions with their counts, most recent first, and ends every host of an id', () => {
    const { clock, pick, table } = setup();
    const ended: string[] = [];
    table.onEnd = (id) => ended.push(id);
    pick('one');
    clock.t += 10;
    pick(hostKey('two', 'h.test'));
    pick(hostKey('two', 'h.test'));
    pick(hostKey('two', 'g.test'));
    const [latest, , oldest] = table.list();
    assert.equal(latest?.id, 'two');
    assert.equal(oldest?.id, 'one');
    assert.equal(table.list().find((v) => v.host === 'h.test')?.requests, 2);
    assert.equal(table.end('two'), 2);
    assert.equal(table.end('two'), 0);
    assert.deepEqual(ended, ['two']);
    assert.deepEqual(
      table.list().map((v) => v.id),
      ['one'],
    );
    assert.equal(table.end('one', true), 1);
    assert.deepEqual(ended, ['two'], 'a remote end is not told again');
  });
});
