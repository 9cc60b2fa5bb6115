import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ProxyRecord } from '../pool/types.ts';
import { isGateway, ProviderSessions, render, renderTemplate, servesAnyCountry } from './gateways.ts';

const gateway = (o: Partial<ProxyRecord> = {}): ProxyRecord => ({
  id: 'gw',
  protocol: 'http',
  host: 'gw.provider.example',
  port: 7777,
  username: null,
  password: 'p',
  weight: 1,
  country: 'DE',
  tags: [],
  createdAt: 0,
  updatedAt: 0,
  usernameTemplate: 'user-zone-res-session-{session}-country-{country}-{COUNTRY}-{rand}',
  ...o,
});

describe('provider gateways', () => {
  it('renders each placeholder, and leaves other braces alone', () => {
    const v = { session: 's1', country: 'Fr', rand: 'r9' };
    assert.equal(
      renderTemplate('a-{session}-{country}-{COUNTRY}-{rand}-{other}', v),
      'a-s1-fr-FR-r9-{other}',
    );
    assert.equal(renderTemplate('c-{country}', { ...v, country: null }), 'c-');
  });

  it('derives the same provider session on every instance, the next one after a ban, told to the others', () => {
    const [a, b] = [new ProviderSessions(), new ProviderSessions()];
    const told: [string, number][] = [];
    a.onBump = (key, gen) => told.push([key, gen]);
    const first = a.id('sess', 'gw');
    assert.match(first, /^[0-9a-f]{16}$/);
    assert.equal(b.id('sess', 'gw'), first, 'the same derivation');
    assert.notEqual(a.id('sess', 'other-gw'), first, 'per gateway');
    a.bump('sess', 'gw');
    const second = a.id('sess', 'gw');
    assert.notEqual(second, first);
    for (const [key, gen] of told) b.applyRemote(key, gen);
    assert.equal(b.id('sess', 'gw'), second);
    b.applyRemote(told[0]?.[0] ?? '', 0);
    assert.equal(b.id('sess', 'gw'), second, 'an older generation changes nothing');
    assert.notEqual(a.id(undefined, 'gw'), a.id(undefined, 'gw'), 'no session: a fresh one each time');
  });

  it('renders a dial record and a ban key per provider session; the entry itself is untouched', () => {
    const r = gateway();
    const d = render(new ProviderSessions(), r, 'k', 'JP');
    assert.match(d.record.username ?? '', /^user-zone-res-session-[0-9a-f]{16}-country-jp-JP-[0-9a-f]{12}$/);
    assert.equal(d.record.password, 'p');
    assert.equal(d.banKey, `gw#${/session-([0-9a-f]{16})/.exec(d.record.username ?? '')?.[1]}`);
    assert.equal(r.username, null);
    assert.equal(
      render(new ProviderSessions(), r, undefined, null).banKey,
      null,
      'no session: nothing to cool',
    );
    assert.ok(isGateway(r) && servesAnyCountry(r));
    const pw = render(
      null,
      gateway({ usernameTemplate: null, username: 'u', passwordTemplate: 'pw-{session}' }),
      'k',
      null,
    );
    assert.equal(pw.record.username, 'u');
    assert.match(pw.record.password ?? '', /^pw-[0-9a-f]{16}$/, 'a password template renders too');
    assert.ok(servesAnyCountry(gateway({ usernameTemplate: null, passwordTemplate: 'x-{COUNTRY}' })));
    assert.ok(!isGateway(gateway({ usernameTemplate: null })));
    assert.ok(!servesAnyCountry(gateway({ usernameTemplate: 'user-session-{session}' })));
  });
});

describe('provider-session generations', () => {
  it('a session in use keeps its moved generation while idle ones are evicted first', () => {
    const p = new ProviderSessions();
    p.bump('busy', 'gw');
    const moved = p.id('busy', 'gw');
    // Fill the table past its bound with other sessions' moves, using the busy one now and then.
    for (let i = 0; i < 100_500; i++) {
      p.bump(`idle-${i}`, 'gw');
      if (i % 10_000 === 0) p.id('busy', 'gw');
    }
    assert.equal(p.id('busy', 'gw'), moved, 'still its moved provider session');
  });
});
