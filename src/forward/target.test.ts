import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { absoluteTarget } from './target.ts';

describe('absoluteTarget', () => {
  it('splits origin and path, keeping the path as sent', () => {
    const t = absoluteTarget('http://Example.COM:8080/a/../b?q=1#frag');
    assert.ok(t);
    assert.equal(t.origin.origin, 'http://example.com:8080');
    assert.equal(t.origin.hostname, 'example.com');
    assert.equal(t.path, '/a/../b?q=1', 'dot segments forwarded as sent, fragment dropped');
    assert.equal(absoluteTarget('http://h')?.path, '/');
    assert.equal(absoluteTarget('http://h?x=1')?.path, '/?x=1');
    assert.equal(absoluteTarget('HTTPS://h:443/x')?.origin.origin, 'https://h');
    assert.equal(absoluteTarget('http://[::1]:81/')?.origin.hostname, '[::1]');
  });

  it('refuses what is not an absolute http(s) URI with a host', () => {
    for (const raw of [
      undefined,
      '/path',
      'ftp://h/',
      'http://',
      'http:///x',
      'http://h:99999/',
      'http://h\\x',
    ]) {
      assert.equal(absoluteTarget(raw), null, String(raw));
    }
  });

  it('keeps user-info for the SSRF rules to refuse, without caching it', () => {
    const t = absoluteTarget('http://user:pw@h/x');
    assert.equal(t?.origin.username, 'user');
    assert.notEqual(absoluteTarget('http://user:pw@h/x')?.origin, t?.origin, 'parsed afresh each time');
    assert.equal(absoluteTarget('http://h/x')?.origin, absoluteTarget('http://h/y')?.origin, 'shared');
  });

  it('agrees with WHATWG parsing on where the request goes', () => {
    fc.assert(
      fc.property(
        fc.webUrl({ validSchemes: ['http', 'https'], withQueryParameters: true, withFragments: true }),
        (raw) => {
          const whatwg = new URL(raw);
          const t = absoluteTarget(raw);
          assert.ok(t, raw);
          assert.equal(t.origin.origin, whatwg.origin);
          assert.equal(t.origin.username, whatwg.username);
          whatwg.hash = '';
          // The forwarded path after the origin points where the whole URI points.
          const forwarded = new URL(`${t.origin.origin}${t.path}`);
          assert.equal(`${forwarded.pathname}${forwarded.search}`, `${whatwg.pathname}${whatwg.search}`);
        },
      ),
      { numRuns: 500 },
    );
  });
});
