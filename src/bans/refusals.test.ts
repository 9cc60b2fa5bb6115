import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifySocksError, connectStatusError } from '../upstream/classify.ts';
import { CooldownTable } from './cooldowns.ts';
import { pairKey, TargetRefusals } from './refusals.ts';

function setup(confirmAfter = 3) {
  const clock = { t: 1_000_000 };
  const confirmed: string[] = [];
  const r = new TargetRefusals(new CooldownTable({ now: () => clock.t }), {
    terms: { cooldownS: 60, maxCooldownS: 3600, confirmAfter, windowS: 60 },
    confirm: (id) => confirmed.push(id),
  });
  return { clock, confirmed, r };
}

describe('TargetRefusals', () => {
  it('cools the pair (proxy, host:port) for 60 s, doubling on repeats; other ports are untouched', () => {
    const { clock, r } = setup();
    r.refused('p1', 'example.com', 8443);
    const first = r.table.active('example.com:8443');
    assert.equal(first.length, 1);
    assert.equal(first[0]?.until, clock.t + 60_000);
    r.refused('p1', 'example.com', 8443);
    assert.equal(r.table.active('example.com:8443')[0]?.until, clock.t + 120_000);
    assert.equal(r.table.active('example.com:443').length, 0);
    assert.equal(r.table.active('example.com').length, 0);
  });

  it('asks for one health check once a proxy refused N distinct targets within the window', () => {
    const { clock, confirmed, r } = setup(3);
    r.refused('p1', 'a.example', 1);
    r.refused('p1', 'a.example', 1); // the same target again: still one
    r.refused('p1', 'b.example', 1);
    r.refused('p2', 'c.example', 1); // another proxy's refusal counts for that proxy only
    assert.deepEqual(confirmed, []);
    r.refused('p1', 'c.example', 1);
    assert.deepEqual(confirmed, ['p1']);
    // Within the window, no second check, however many more targets.
    for (let i = 0; i < 10; i++) r.refused('p1', `x${i}.example`, 1);
    assert.deepEqual(confirmed, ['p1']);
    clock.t += 61_000;
    for (let i = 0; i < 3; i++) r.refused('p1', `y${i}.example`, 1);
    assert.deepEqual(confirmed, ['p1', 'p1']);
  });

  it('refusals spread out over more than the window never add up to a check', () => {
    const { clock, confirmed, r } = setup(3);
    for (let i = 0; i < 10; i++) {
      r.refused('p1', `t${i}.example`, 1);
      clock.t += 31_000;
    }
    assert.deepEqual(confirmed, []);
  });

  it('pairKey brackets an IPv6 host', () => {
    assert.equal(pairKey('::1', 8443), '[::1]:8443');
    assert.equal(pairKey('example.com', 443), 'example.com:443');
  });
});

describe('what a refusal of a target is', () => {
  it('a 4xx other than 407/401 to CONNECT is the target refused, not a proxy fault', () => {
    for (const status of [400, 403, 404, 405]) {
      const e = connectStatusError(status);
      assert.equal(e.kind, 'target_refused');
      assert.equal(e.proxyFault, false);
      assert.equal(e.pairFault, true);
    }
    assert.equal(connectStatusError(407).proxyFault, true);
    assert.equal(connectStatusError(503).kind, 'target_unreachable');
  });

  it('SOCKS5 replies other than general failure are about the target; general failure is the proxy', () => {
    const reply = (name: string) => new Error(`Socks5 proxy rejected connection - ${name}`);
    for (const name of ['NotAllowed', 'CommandNotSupported', 'AddressNotSupported']) {
      assert.equal(classifySocksError(reply(name), 1000).kind, 'target_refused');
    }
    for (const name of ['NetworkUnreachable', 'HostUnreachable', 'ConnectionRefused', 'TTLExpired']) {
      assert.equal(classifySocksError(reply(name), 1000).kind, 'target_unreachable');
    }
    const general = classifySocksError(reply('Failure'), 1000);
    assert.equal(general.kind, 'socks');
    assert.equal(general.proxyFault, true);
    const emfile = classifySocksError(new Error('connect EMFILE 127.0.0.1:1080'), 1000);
    assert.equal(emfile.kind, 'local');
  });
});
