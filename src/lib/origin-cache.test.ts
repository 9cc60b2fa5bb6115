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
