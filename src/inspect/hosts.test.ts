import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isRotaError } from '../errors/rota-error.ts';
import { inspectHost } from './hosts.ts';

describe('inspectHost', () => {
  it('writes DNS names in lower case, ASCII, without the trailing dot', () => {
    assert.deepEqual(inspectHost('WWW.Example.COM.'), { kind: 'dns', name: 'www.example.com' });
    assert.deepEqual(inspectHost('bücher.de'), { kind: 'dns', name: 'xn--bcher-kva.de' });
    assert.deepEqual(inspectHost('_dmarc.example.com'), { kind: 'dns', name: '_dmarc.example.com' });
    assert.deepEqual(inspectHost('localhost'), { kind: 'dns', name: 'localhost' });
  });

  it('writes IP addresses as ipaddr.js does, brackets dropped', () => {
    assert.deepEqual(inspectHost('127.0.0.1'), { kind: 'ip', name: '127.0.0.1' });
    assert.deepEqual(inspectHost('[::1]'), { kind: 'ip', name: '::1' });
    assert.deepEqual(inspectHost('2001:DB8:0:0::1'), { kind: 'ip', name: '2001:db8::1' });
  });

  it('refuses what is not a host with INVALID_URL', () => {
    const bad = [
      '',
      '*.example.com',
      'a..b',
      'exa mple.com',
      '-a.com',
      'a-.com',
      `${'x'.repeat(64)}.com`,
      '1.2.3',
      '[example.com]',
      'fe80::1%eth0',
      'a/b',
      'x'.repeat(400),
      `${'a.'.repeat(127)}com`,
    ];
    for (const h of bad) {
      assert.throws(
        () => inspectHost(h),
        (e) => isRotaError(e, 'INVALID_URL'),
        JSON.stringify(h),
      );
    }
  });
});
