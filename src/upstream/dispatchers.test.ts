import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { ProxyRecord } from '../pool/types.ts';
import { DispatcherCache } from './dispatchers.ts';

const base: ProxyRecord = {
  id: 'p1',
  protocol: 'http',
  host: '127.0.0.1',
  port: 3128,
  username: 'u',
  password: 'secret',
  weight: 1,
  country: null,
  tags: [],
  createdAt: 0,
  updatedAt: 0,
};

describe('DispatcherCache', () => {
  const cache = new DispatcherCache({ connectTimeoutMs: 1_000, closeGraceMs: 50 });
  after(() => cache.closeAll());

  it('hands out one dispatcher per proxy for the same record, and for an equal copy of it', () => {
    const d = cache.get(base);
    assert.equal(cache.get(base), d);
    assert.equal(cache.get({ ...base, weight: 5, tags: ['x'], updatedAt: 1 }), d);
    assert.equal(cache.get(base), d);
    assert.equal(cache.size, 1);
  });

  it('a changed address or credential gets a new dispatcher, and going back gets another', () => {
    const first = cache.get(base);
    for (const change of [{ password: 'other' }, { username: null }, { port: 3129 }, { host: 'localhost' }]) {
      const changed = cache.get({ ...base, ...change });
      assert.notEqual(changed, first, JSON.stringify(change));
      const back = cache.get({ ...base });
      assert.notEqual(back, changed);
      assert.equal(cache.get(base), back, 'the original object again matches the current entry');
    }
    assert.equal(cache.size, 1);
  });

  it('close() forgets a proxy: the next get builds a new dispatcher', async () => {
    const d = cache.get(base);
    await cache.close(base.id);
    assert.equal(cache.size, 0);
    assert.notEqual(cache.get(base), d);
  });
});
