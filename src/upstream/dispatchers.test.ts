import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import type { ProxyRecord } from '../pool/types.ts';
import { DispatcherCache } from './dispatchers.ts';
import { send } from './send.ts';

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

describe('DispatcherCache: gateway sessions', () => {
  it('a proxy made a gateway drops the dispatcher of its fixed credentials', async () => {
    const cache = new DispatcherCache({ connectTimeoutMs: 1_000, closeGraceMs: 10 });
    try {
      cache.get({ ...base, id: 'turned' });
      assert.equal(cache.size, 1);
      cache.get({ ...base, id: 'turned', usernameTemplate: 'u-{session}', username: 'u-1' });
      assert.equal(cache.size, 0);
    } finally {
      await cache.closeAll();
    }
  });

  it('beyond 256 rendered credentials the least recently used idle one goes; a busy one stays and finishes', async () => {
    // A proxy on loopback that holds /slow until told, and answers anything else at once.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let arrived = () => {};
    const slowArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const proxy = http.createServer((req, res) => {
      if (req.url?.endsWith('/slow')) {
        arrived();
        void held.then(() => res.end('late'));
      } else res.end('ok');
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const cache = new DispatcherCache({ connectTimeoutMs: 1_000, closeGraceMs: 50 });
    try {
      const gw: ProxyRecord = {
        ...base,
        id: 'gw',
        port: (proxy.address() as AddressInfo).port,
        usernameTemplate: 'u-{session}',
      };
      const rendered = (n: number): ProxyRecord => ({ ...gw, username: `u-${n}` });
      const ask = (d: ReturnType<DispatcherCache['get']>, path: string) =>
        send(d, {
          url: new URL(`http://target.test${path}`),
          method: 'GET',
          headers: {},
          body: null,
          deadline: performance.now() + 10_000,
          maxResponseBytes: 1024,
        });
      const busy = cache.get(rendered(0));
      const answer = ask(busy, '/slow');
      await slowArrived;
      const idle = cache.get(rendered(1));
      await ask(idle, '/fast');
      // 256 more: the cache passes its bound; the least recently used are 0 (busy) and then 1 (idle).
      for (let n = 2; n <= 257; n++) cache.get(rendered(n));
      assert.equal(cache.get(rendered(0)), busy, 'the busy one was kept');
      assert.notEqual(cache.get(rendered(1)), idle, 'the idle one was closed to make room');
      release();
      const res = await answer;
      assert.equal(res.statusCode, 200);
      assert.equal(res.body.toString(), 'late', 'the busy session’s answer arrived whole');
    } finally {
      release();
      await cache.closeAll();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });

  it('with every cached session busy, one more is still served (the cache holds more until they end)', async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let waiting = 0;
    const proxy = http.createServer((_req, res) => {
      waiting++;
      void held.then(() => res.end('ok'));
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const cache = new DispatcherCache({ connectTimeoutMs: 1_000, closeGraceMs: 50 });
    try {
      const gw: ProxyRecord = {
        ...base,
        id: 'gw',
        port: (proxy.address() as AddressInfo).port,
        usernameTemplate: 'u-{session}',
      };
      const answers = Array.from({ length: 300 }, (_, n) =>
        send(cache.get({ ...gw, username: `u-${n}` }), {
          url: new URL('http://target.test/x'),
          method: 'GET',
          headers: {},
          body: null,
          deadline: performance.now() + 20_000,
          maxResponseBytes: 1024,
        }).then(
          (r) => r.statusCode,
          (e: unknown) => (e as Error).message,
        ),
      );
      for (let i = 0; i < 500 && waiting < 300; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(waiting, 300, 'every request reached the proxy');
      release();
      const codes = await Promise.all(answers);
      assert.deepEqual(new Set(codes), new Set([200]), 'none was cut for room');
    } finally {
      release();
      await cache.closeAll();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});
