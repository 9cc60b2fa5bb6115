import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConnectionCaps, peerKey } from './connection-caps.ts';

describe('connection caps', () => {
  it('caps one address, counts it back down, and forgets it at zero', () => {
    const caps = new ConnectionCaps({ maxPerIp: 2, maxTotal: 100 });
    assert.equal(caps.admit('10.0.0.1', 'http').type, 'admitted');
    assert.equal(caps.admit('10.0.0.1', 'api').type, 'admitted');
    assert.deepEqual(caps.admit('10.0.0.1', 'socks5'), { type: 'refused', reason: 'per_ip' });
    assert.equal(caps.admit('10.0.0.2', 'socks5').type, 'admitted', 'another address has its own count');
    assert.equal(caps.of('10.0.0.1'), 2);
    assert.equal(caps.total, 3);
    caps.release('10.0.0.1', 'http');
    assert.equal(caps.admit('10.0.0.1', 'socks5').type, 'admitted', 'room again after a close');
    for (const [k, d] of [
      ['10.0.0.1', 'api'],
      ['10.0.0.1', 'socks5'],
      ['10.0.0.2', 'socks5'],
    ] as const)
      caps.release(k, d);
    assert.equal(caps.total, 0);
    assert.equal(caps.addresses, 0, 'no entry kept for an address with no connection');
    assert.equal(caps.open('api') + caps.open('http') + caps.open('socks5'), 0);
    assert.deepEqual([...caps.refused], [['socks5 per_ip', 1]]);
  });

  it('caps all addresses together, with a reserve for the API', () => {
    const caps = new ConnectionCaps({ maxPerIp: 10, maxTotal: 3, apiReserve: 1 });
    for (let i = 0; i < 3; i++) assert.equal(caps.admit(`10.0.0.${i}`, 'http').type, 'admitted');
    assert.deepEqual(caps.admit('10.0.0.9', 'socks5'), { type: 'refused', reason: 'total' });
    assert.deepEqual(caps.admit('10.0.0.9', 'http'), { type: 'refused', reason: 'total' });
    assert.equal(caps.admit('10.0.0.9', 'api').type, 'admitted', 'the API may use its reserve');
    assert.deepEqual(caps.admit('10.0.0.8', 'api'), { type: 'refused', reason: 'total' });
    assert.equal(caps.total, 4);
  });

  it('counts exempt addresses against the total only', () => {
    const caps = new ConnectionCaps({ maxPerIp: 1, maxTotal: 3, exempt: (a) => a === '10.1.1.1' });
    assert.equal(caps.admit('10.1.1.1', 'api').type, 'admitted');
    assert.equal(caps.admit('10.1.1.1', 'api').type, 'admitted');
    assert.equal(caps.admit('10.0.0.1', 'api').type, 'admitted');
    assert.equal(caps.admit('10.0.0.1', 'api').type, 'refused');
  });

  it('the default API reserve grows with the total cap', () => {
    assert.equal(new ConnectionCaps({ maxPerIp: 1, maxTotal: 10 }).apiReserve, 4);
    assert.equal(new ConnectionCaps({ maxPerIp: 1, maxTotal: 64_000 }).apiReserve, 1_000);
  });

  it('a release of an address never admitted changes nothing', () => {
    const caps = new ConnectionCaps({ maxPerIp: 1, maxTotal: 3 });
    caps.release('10.0.0.1', 'api');
    assert.equal(caps.total, 0);
    assert.equal(caps.open('api'), 0);
  });

  it('keys IPv4 as itself (mapped or not) and IPv6 by its /64', () => {
    assert.equal(peerKey('127.0.0.2'), '127.0.0.2');
    assert.equal(peerKey('::ffff:127.0.0.2'), '127.0.0.2');
    assert.equal(peerKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
    assert.equal(peerKey('2001:db8:1:2:bbbb::7'), '2001:db8:1:2::/64', 'one host, one /64');
    assert.equal(peerKey('::1'), '0:0:0:0::/64');
  });
});
