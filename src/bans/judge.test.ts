import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { banHost, portOf } from './judge.ts';

describe('the host and port a ban, a pace and a host session are about', () => {
  it('one name per site: lower case, no IPv6 brackets, no fully qualified trailing dot', () => {
    assert.equal(banHost(new URL('http://Shop.Example/x')), 'shop.example');
    assert.equal(banHost(new URL('http://shop.example./x')), 'shop.example');
    assert.equal(banHost({ hostname: 'SHOP.example.' }), 'shop.example');
    assert.equal(banHost(new URL('http://[2001:DB8::1]:8080/')), '2001:db8::1');
    assert.equal(banHost(new URL('http://192.0.2.1/')), '192.0.2.1');
  });

  it('the port, the scheme’s own when none is named', () => {
    assert.equal(portOf(new URL('http://a.test/')), 80);
    assert.equal(portOf(new URL('https://a.test/')), 443);
    assert.equal(portOf(new URL('wss://a.test/')), 443);
    assert.equal(portOf(new URL('http://a.test:8080/')), 8080);
  });
});
