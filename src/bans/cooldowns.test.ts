import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CooldownTable } from './cooldowns.ts';
import { banSignal, retryAfterSeconds } from './detect.ts';

/** A clock at 0 ms, for signals whose Retry-After is not a date. */
const atEpoch = () => 0;
const terms = (retryAfterS: number | null = null) => ({ cooldownS: 300, maxCooldownS: 3600, retryAfterS });

describe('cool-down table', () => {
  it('keeps when each ban began (the dashboard shows it), its own or told by another instance', () => {
    const clock = { t: 1_000 };
    const table = new CooldownTable({ now: () => clock.t });
    table.ban('p', 'a.example', terms());
    assert.equal(table.forHost('a.example')?.get('p')?.since, 1_000);
    clock.t = 400_000;
    table.ban('p', 'a.example', terms());
    assert.equal(table.forHost('a.example')?.get('p')?.since, 400_000, 'a repeat starts anew');
    clock.t = 500_000;
    table.applyRemote('q', 'a.example', 900_000, 1);
    assert.equal(table.forHost('a.example')?.get('q')?.since, 500_000, 'told by another instance: now');
    clock.t = 600_000;
    table.applyRemote('q', 'a.example', 900_000, 1);
    assert.equal(table.forHost('a.example')?.get('q')?.since, 500_000, 'the same ban told again');
  });

  it('doubles on each repeat up to the maximum; a repeat is within max_cooldown_s of the last end', () => {
    const clock = { t: 0 };
    const table = new CooldownTable({ now: () => clock.t });
    const seconds = () => ((table.forHost('a.example')?.get('p')?.until ?? 0) - clock.t) / 1000;
    const durations: number[] = [];
    for (let i = 0; i < 6; i++) {
      table.ban('p', 'a.example', terms());
      durations.push(seconds());
      clock.t += seconds() * 1000 + 1000; // banned again 1 s after the cool-down ended
    }
    assert.deepEqual(durations, [300, 600, 1200, 2400, 3600, 3600]);
    clock.t += 3601 * 1000; // more than max_cooldown_s after the last end: counting starts again
    table.ban('p', 'a.example', terms());
    assert.equal(seconds(), 300);
    assert.equal(table.forHost('a.example')?.get('p')?.count, 1);
  });

  it('honours a longer Retry-After, capped at the maximum; a shorter one does not shorten it', () => {
    const table = new CooldownTable({ now: () => 0 });
    assert.equal(table.ban('p', 'h', terms(900)).until, 900_000);
    assert.equal(table.ban('q', 'h', terms(99_999)).until, 3_600_000);
    assert.equal(table.ban('r', 'h', terms(5)).until, 300_000);
  });

  it("keeps a gateway's exits apart: listed under its id with a digest; removing it forgets them all", () => {
    const table = new CooldownTable({ now: () => 0 });
    table.ban('gw#s1', 'a.example', terms());
    table.applyRemote('gw#s2', 'b.example', 10_000, 1);
    table.ban('other', 'a.example', terms());
    const listed = table.active();
    assert.deepEqual(
      listed.map((c) => c.proxyId),
      ['gw', 'gw', 'other'],
    );
    assert.match(listed[0]?.exit ?? '', /^[0-9a-f]{12}$/);
    assert.notEqual(listed[0]?.exit, listed[1]?.exit);
    assert.ok(!JSON.stringify(listed).includes('s1'), 'never the provider session itself');
    assert.equal(table.forHost('a.example')?.has('gw'), false, 'the gateway itself is not cooled');
    table.removeProxy('gw');
    assert.deepEqual(
      table.active().map((c) => c.proxyId),
      ['other'],
    );
  });

  it('lists active pairs by host, clears by host or all, forgets a removed proxy', () => {
    const clock = { t: 0 };
    const table = new CooldownTable({ now: () => clock.t });
    table.ban('p', 'a', terms());
    table.ban('q', 'a', terms());
    table.ban('p', 'b', terms());
    assert.equal(table.active('a').length, 2);
    assert.equal(table.activeCount(), 3);
    table.removeProxy('p');
    assert.deepEqual(
      table.active().map((c) => `${c.proxyId}@${c.host}`),
      ['q@a'],
    );
    assert.equal(table.clear('a'), 1);
    assert.equal(table.size, 0);
    table.ban('p', 'a', terms());
    clock.t += 301_000;
    assert.equal(table.activeCount(), 0, 'ended cool-downs are not active');
    assert.equal(table.size, 1, 'but kept, to count repeats');
  });

  it('never holds more than its bound, dropping the oldest ban first (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ p: fc.nat(30), h: fc.nat(30), dt: fc.nat(10_000) }), { maxLength: 300 }),
        (bans) => {
          const clock = { t: 0 };
          const table = new CooldownTable({ now: () => clock.t, max: 50 });
          for (const b of bans) {
            clock.t += b.dt;
            table.ban(`p${b.p}`, `h${b.h}`, terms());
            assert.ok(table.size <= 50);
            assert.ok(table.forHost(`h${b.h}`)?.get(`p${b.p}`), 'the newest ban is always kept');
          }
        },
      ),
    );
  });
});

describe('ban signals', () => {
  it('reads the clock only for a ban (an answer that is none costs no clock read)', () => {
    let reads = 0;
    const clock = () => {
      reads++;
      return 0;
    };
    // `policy` and `answer` are declared below: this test runs after the describe body has.
    assert.equal(banSignal(policy, answer(200), clock), undefined);
    assert.equal(reads, 0);
    assert.ok(banSignal(policy, answer(403), clock));
    assert.equal(reads, 1);
  });

  const policy = {
    enabled: true,
    status_codes: [403, 429],
    body_patterns: ['Captcha'],
    cooldown_s: 1,
    max_cooldown_s: 2,
  };
  const answer = (status: number, body = '', headers: Record<string, string> = {}) => ({
    status,
    headers,
    body: Buffer.from(body),
  });

  it('by status, by a case-insensitive pattern in the first 64 KiB only, never when disabled', () => {
    assert.ok(banSignal(policy, answer(403), atEpoch));
    assert.equal(banSignal(policy, answer(404), atEpoch), undefined);
    assert.ok(banSignal(policy, answer(200, 'please solve the CAPTCHA'), atEpoch));
    assert.equal(banSignal(policy, answer(200, `${'x'.repeat(64 * 1024)}captcha`), atEpoch), undefined);
    assert.equal(banSignal({ ...policy, enabled: false }, answer(403), atEpoch), undefined);
    assert.equal(banSignal(policy, { status: 200, headers: {}, body: null }, atEpoch), undefined);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    assert.equal(retryAfterSeconds('120', 0), 120);
    assert.equal(retryAfterSeconds(new Date(90_000).toUTCString(), 0), 90);
    assert.equal(retryAfterSeconds('soon', 0), null);
    assert.equal(retryAfterSeconds(undefined, 0), null);
    assert.deepEqual(banSignal(policy, answer(429, '', { 'retry-after': '30' }), atEpoch), {
      retryAfterS: 30,
    });
  });
});
