// Tests for the proxy-username and X-Rota-* header parameters: the documented example, every rejection,
// case rules, header merging, and round-trip/totality properties over generated usernames.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { COUNTRY_CODES, mergeHeaders, type ParamsResult, parseUsername } from './params.ts';

function okParams(result: ParamsResult): unknown {
  assert.ok(result.ok, result.ok ? '' : result.reason);
  return result.params;
}

function rejected(result: ParamsResult): string {
  assert.equal(result.ok, false);
  return result.ok ? '' : result.reason;
}

describe('parseUsername', () => {
  it('parses the documented example', () => {
    assert.deepEqual(okParams(parseUsername('scraper-session-a1b2-country-de')), {
      label: 'scraper',
      sessionId: 'a1b2',
      country: 'DE',
    });
  });
  it('accepts keys in any order and either key alone', () => {
    const expected = { label: 'x', sessionId: 'S_1', country: 'US' };
    assert.deepEqual(okParams(parseUsername('x-country-us-session-S_1')), expected);
    assert.deepEqual(okParams(parseUsername('x-session-S_1-country-US')), expected);
    assert.deepEqual(okParams(parseUsername('x-country-Gb')), { label: 'x', country: 'GB' });
    assert.deepEqual(okParams(parseUsername('x-session-abc')), { label: 'x', sessionId: 'abc' });
  });
  it('treats no username, an empty one and a bare label as label only', () => {
    assert.deepEqual(okParams(parseUsername(null)), { label: '' });
    assert.deepEqual(okParams(parseUsername('')), { label: '' });
    assert.deepEqual(okParams(parseUsername('team.a_1')), { label: 'team.a_1' });
    assert.deepEqual(okParams(parseUsername('-session-abc')), { label: '', sessionId: 'abc' });
  });
  it('enforces the label rules', () => {
    assert.deepEqual(okParams(parseUsername('a'.repeat(64))), { label: 'a'.repeat(64) });
    for (const name of ['a'.repeat(65), 'with space', 'ünïcode', 'a+b', 'a@b', 'a:b']) {
      assert.equal(rejected(parseUsername(name)), 'invalid label');
    }
  });
  it('keeps the session id case-sensitive and bounded', () => {
    assert.deepEqual(okParams(parseUsername('-session-AbC')), { label: '', sessionId: 'AbC' });
    const longest = 'z'.repeat(64);
    assert.deepEqual(okParams(parseUsername(`-session-${longest}`)), { label: '', sessionId: longest });
    for (const id of ['z'.repeat(65), 'a.b', 'a b', 'é']) {
      assert.equal(rejected(parseUsername(`x-session-${id}`)), 'invalid session');
    }
  });
  it('accepts only assigned country codes', () => {
    assert.equal(COUNTRY_CODES.size, 249);
    // ICU names every assigned code, so a typo in the list would show up here.
    const names = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });
    for (const cc of COUNTRY_CODES) assert.notEqual(names.of(cc), undefined, cc);
    for (const cc of ['us', 'US', 'uS', 'ax', 'ss', 'bq', 'zw']) okParams(parseUsername(`x-country-${cc}`));
    for (const cc of ['uk', 'eu', 'xk', 'zz', 'aa', 'd', 'deu', '12', 'dé']) {
      assert.equal(rejected(parseUsername(`x-country-${cc}`)), 'invalid country');
    }
  });
  it('rejects unknown, upper-case, dangling and repeated keys', () => {
    assert.equal(rejected(parseUsername('x-city-paris')), 'unknown parameter key');
    assert.equal(rejected(parseUsername('x-Session-abc')), 'unknown parameter key');
    assert.equal(rejected(parseUsername('x-COUNTRY-de')), 'unknown parameter key');
    assert.equal(rejected(parseUsername('my-user')), 'unknown parameter key');
    assert.equal(rejected(parseUsername('x--session-abc')), 'unknown parameter key');
    assert.equal(rejected(parseUsername('x-session')), 'session has no value');
    assert.equal(rejected(parseUsername('x-session-abc-country')), 'country has no value');
    assert.equal(rejected(parseUsername('x-session-')), 'invalid session');
    assert.equal(rejected(parseUsername('x-session-a-session-a')), 'session given twice');
    assert.equal(rejected(parseUsername('x-country-de-country-fr')), 'country given twice');
    assert.equal(rejected(parseUsername('x-country-de-country')), 'country given twice');
  });
  it('rejects usernames over 255 characters', () => {
    const at255 = `${'a'.repeat(64)}-session-${'b'.repeat(64)}-country-de`.padEnd(255, 'x');
    assert.equal(rejected(parseUsername(at255)), 'invalid country');
    assert.equal(rejected(parseUsername(`${at255}x`)), 'username too long');
  });
  it('never echoes values in reasons', () => {
    const secret = 'hunter2hunter2';
    for (const name of [`x-${secret}-v`, `x-session-${secret}!`, `x-country-${secret}`, `${secret}!`]) {
      assert.ok(!rejected(parseUsername(name)).includes(secret));
    }
  });
});

describe('parseUsername: the inspect key', () => {
  it('takes on and off, alone or with the other keys, in any order', () => {
    assert.deepEqual(okParams(parseUsername('scraper-inspect-on-session-a1')), {
      label: 'scraper',
      sessionId: 'a1',
      inspect: 'on',
    });
    assert.deepEqual(okParams(parseUsername('scraper-inspect-off')), { label: 'scraper', inspect: 'off' });
    assert.deepEqual(okParams(parseUsername('x-country-de-inspect-off-session-s')), {
      label: 'x',
      sessionId: 's',
      country: 'DE',
      inspect: 'off',
    });
    assert.deepEqual(okParams(parseUsername('-inspect-on')), { label: '', inspect: 'on' });
  });
  it('refuses other values, upper case, a missing value and a repeat', () => {
    for (const v of ['ON', 'Off', 'yes', 'true', '1', 'onn', '']) {
      assert.equal(rejected(parseUsername(`x-inspect-${v}`)), 'invalid inspect', v);
    }
    assert.equal(rejected(parseUsername('x-inspect')), 'inspect has no value');
    assert.equal(rejected(parseUsername('x-Inspect-on')), 'unknown parameter key');
    assert.equal(rejected(parseUsername('x-inspect-on-inspect-on')), 'inspect given twice');
    assert.equal(rejected(parseUsername('x-inspect-on-inspect-off')), 'inspect given twice');
  });
  it('names no value in its reasons', () => {
    assert.ok(!rejected(parseUsername('x-inspect-hunter2hunter2')).includes('hunter2'));
  });
  it('is kept by mergeHeaders', () => {
    assert.deepEqual(okParams(mergeHeaders({ label: 'l', inspect: 'off' }, { session: 's' })), {
      label: 'l',
      sessionId: 's',
      inspect: 'off',
    });
  });
});

describe('mergeHeaders', () => {
  const user = { label: 'l', sessionId: 'abc', country: 'DE' };
  it('accepts headers that agree with the username', () => {
    assert.deepEqual(okParams(mergeHeaders(user, {})), user);
    assert.deepEqual(okParams(mergeHeaders(user, { session: 'abc', country: 'de' })), user);
    assert.deepEqual(okParams(mergeHeaders(user, { session: undefined, country: 'DE' })), user);
  });
  it('takes values from headers alone', () => {
    assert.deepEqual(okParams(mergeHeaders({ label: '' }, { session: 's1', country: 'fr' })), {
      label: '',
      sessionId: 's1',
      country: 'FR',
    });
    assert.deepEqual(okParams(mergeHeaders({ label: 'a', country: 'FR' }, { session: 's1' })), {
      label: 'a',
      sessionId: 's1',
      country: 'FR',
    });
  });
  it('rejects contradicting headers', () => {
    assert.equal(rejected(mergeHeaders(user, { session: 'abd' })), 'X-Rota-Session contradicts username');
    assert.equal(rejected(mergeHeaders(user, { session: 'ABC' })), 'X-Rota-Session contradicts username');
    assert.equal(rejected(mergeHeaders(user, { country: 'fr' })), 'X-Rota-Country contradicts username');
  });
  it('rejects bad and empty header values', () => {
    for (const session of ['', 'a-b', 'a, b', 'x'.repeat(65)]) {
      assert.equal(rejected(mergeHeaders({ label: '' }, { session })), 'invalid X-Rota-Session');
    }
    for (const country of ['', 'uk', 'de, fr', ' de', 'deu']) {
      assert.equal(rejected(mergeHeaders({ label: '' }, { country })), 'invalid X-Rota-Country');
    }
  });
});

describe('properties', () => {
  const codes = [...COUNTRY_CODES];
  const randomCase = (s: string, mask: number): string =>
    [...s].map((c, i) => ((mask >> i) & 1 ? c.toLowerCase() : c)).join('');

  it('valid parameters round-trip in any key order', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9_.]{0,64}$/),
        fc.option(fc.stringMatching(/^[A-Za-z0-9_]{1,64}$/), { nil: undefined }),
        fc.option(fc.tuple(fc.constantFrom(...codes), fc.nat(3)), { nil: undefined }),
        fc.boolean(),
        (label, sessionId, cc, countryFirst) => {
          const parts = [
            ...(sessionId === undefined ? [] : [`session-${sessionId}`]),
            ...(cc === undefined ? [] : [`country-${randomCase(cc[0], cc[1])}`]),
          ];
          if (countryFirst) parts.reverse();
          const expected = {
            label,
            ...(sessionId === undefined ? {} : { sessionId }),
            ...(cc === undefined ? {} : { country: cc[0] }),
          };
          assert.deepEqual(okParams(parseUsername([label, ...parts].join('-'))), expected);
          assert.deepEqual(
            okParams(mergeHeaders({ label }, { session: sessionId, country: cc?.[0] })),
            expected,
          );
        },
      ),
    );
  });

  it('parseUsername is total and only returns valid parameters', () => {
    const pieces = fc.constantFrom(
      ...['-', 'session', 'country', 'inspect', 'on', 'off', 'de', 'Us', 'a1', '.', '_', 'é', ' ', 'x'],
    );
    const names = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.array(pieces, { maxLength: 40 }).map((p) => p.join('')),
    );
    fc.assert(
      fc.property(names, (name) => {
        const result = parseUsername(name);
        if (!result.ok) {
          assert.ok(result.reason.length > 0 && result.reason.length <= 40);
          return;
        }
        const { label, sessionId, country, inspect } = result.params;
        if (inspect !== undefined) assert.ok(inspect === 'on' || inspect === 'off');
        assert.match(label, /^[A-Za-z0-9_.]{0,64}$/);
        if (sessionId !== undefined) assert.match(sessionId, /^[A-Za-z0-9_]{1,64}$/);
        if (country !== undefined) assert.ok(COUNTRY_CODES.has(country));
      }),
      { numRuns: 2000 },
    );
  });
});
