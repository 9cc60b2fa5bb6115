import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OriginCache } from './origin-cache.ts';

describe('OriginCache', () => {
  it('parses each origin once and stays bounded', () => {
    const c = new OriginCache();
    const first = c.get('http://a.example:8080');
    assert.equal(c.get('http://a.example:8080'), first, 'the same parsed URL');
    assert.equal(first.host, 'a.example:8080');
    for (let i = 0; i < 1000; i++) c.get(`http://h${i}.example`);
    assert.ok(c.size <= 256, `size ${c.size}`);
  });
});

describe('ParsedOrigin', () => {
  it("keeps URL's own origin and host strings, default ports dropped, IPv6 bracketed, names lower-cased", () => {
    const cases: Array<[string, string, string]> = [
      ['http://a.example:8080', 'http://a.example:8080', 'a.example:8080'],
      ['http://A.Example:80', 'http://a.example', 'a.example'],
      ['https://b.example:443', 'https://b.example', 'b.example'],
      ['http://[::1]:3128', 'http://[::1]:3128', '[::1]:3128'],
      ['http://127.0.0.1', 'http://127.0.0.1', '127.0.0.1'],
    ];
    for (const [raw, text, hostPort] of cases) {
      const o = new OriginCache().get(raw);
      assert.equal(o.text, text, raw);
      assert.equal(o.hostPort, hostPort, raw);
      assert.equal(o.text, o.origin, `${raw}: the same as URL.origin`);
      assert.equal(o.hostPort, o.host, `${raw}: the same as URL.host`);
    }
  });

  it('refuses what URL refuses', () => {
    assert.throws(() => new OriginCache().get('http://exa mple'), TypeError);
  });
});
