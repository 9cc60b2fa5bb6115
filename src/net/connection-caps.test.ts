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

describe('ConnectionCaps.admitHeld: addresses read only when the per-address cap can matter', () => {
  class CountingPeer {
    reads = 0;
    readonly #address: string;
    constructor(address: string) {
      this.#address = address;
    }
    get remoteAddress(): string {
      this.reads++;
      return this.#address;
    }
  }
  const peer = (address: string) => new CountingPeer(address);

  it('reads no address below the cap; from the cap on, counts every open connection by address', () => {
    const caps = new ConnectionCaps({ maxPerIp: 3, maxTotal: 100 });
    const a = [peer('10.0.0.1'), peer('10.0.0.1'), peer('10.0.0.2')];
    const held = a.map((p) => caps.admitHeld(p, 'http'));
    assert.deepEqual(
      a.map((p) => p.reads),
      [0, 0, 0],
      'no getpeername below the cap',
    );
    assert.equal(caps.total, 3);
    // The fourth connection: every open one is counted by its address, then the cap applies.
    const fourth = caps.admitHeld(peer('10.0.0.1'), 'http');
    assert.equal('key' in fourth, true);
    assert.equal(caps.of('10.0.0.1'), 3);
    assert.deepEqual(caps.admitHeld(peer('10.0.0.1'), 'socks5'), { type: 'refused', reason: 'per_ip' });
    assert.equal('key' in caps.admitHeld(peer('10.0.0.3'), 'http'), true);
    for (const h of [...held, fourth]) if ('key' in h) caps.releaseHeld(h);
    // Below half the cap again: back to counting without addresses.
    assert.equal(caps.total, 1);
    assert.equal(caps.of('10.0.0.3'), 0, 'no count by address kept');
    const later = peer('10.0.0.9');
    caps.admitHeld(later, 'api');
    assert.equal(later.reads, 0);
  });

  it('the total cap holds without reading any address', () => {
    const caps = new ConnectionCaps({ maxPerIp: 50, maxTotal: 2, apiReserve: 1 });
    const p = peer('10.0.0.1');
    caps.admitHeld(p, 'http');
    caps.admitHeld(p, 'http');
    assert.deepEqual(caps.admitHeld(p, 'socks5'), { type: 'refused', reason: 'total' });
    assert.equal('key' in caps.admitHeld(p, 'api'), true, 'the API reserve');
    assert.equal(p.reads, 0);
  });
});
