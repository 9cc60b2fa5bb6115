import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseProxyUrl } from './proxy-url.ts';

describe('parseProxyUrl', () => {
  it('normalises scheme and host and keeps an explicit port', () => {
    const r = parseProxyUrl('SOCKS5H://Proxy.Example.COM.:1080/');
    assert.deepEqual(r, {
      ok: true,
      value: { protocol: 'socks5h', host: 'proxy.example.com', port: 1080, username: null, password: null },
    });
  });

  it('moves percent-encoded user-info out of the URL', () => {
    const r = parseProxyUrl('http://al%40ice:p%3Ass@10.0.0.1:3128');
    assert.ok(r.ok);
    assert.equal(r.value.username, 'al@ice');
    assert.equal(r.value.password, 'p:ss');
    const userOnly = parseProxyUrl('http://bob@10.0.0.1:3128');
    assert.ok(userOnly.ok);
    assert.equal(userOnly.value.username, 'bob');
    assert.equal(userOnly.value.password, null);
  });

  it('accepts bracketed IPv6 hosts', () => {
    const r = parseProxyUrl('http://[2001:DB8::1]:8080');
    assert.ok(r.ok);
    assert.equal(r.value.host, '2001:db8::1');
  });

  it('never puts credentials in a failure reason', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (junk, secret) => {
        const r = parseProxyUrl(`${junk}://u:${encodeURIComponent(`S3cr3t${secret}`)}@${junk}`);
        if (!r.ok) assert.ok(!r.reason.includes('S3cr3t'));
      }),
      { numRuns: 500 },
    );
  });

  it('never throws, whatever the input', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (s) => {
        const r = parseProxyUrl(s);
        assert.equal(typeof r.ok, 'boolean');
      }),
      { numRuns: 2000 },
    );
  });

  it('round-trips every valid host/port combination', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('http', 'https', 'socks4', 'socks4a', 'socks5', 'socks5h'),
        fc.domain(),
        fc.integer({ min: 1, max: 65535 }),
        (scheme, host, port) => {
          const r = parseProxyUrl(`${scheme}://${host}:${port}`);
          assert.ok(r.ok, `${scheme}://${host}:${port}`);
          assert.equal(r.value.port, port);
          assert.equal(r.value.host, host.toLowerCase());
        },
      ),
      { numRuns: 500 },
    );
  });
});
