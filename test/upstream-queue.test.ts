import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DispatcherCache } from '../src/upstream/dispatchers.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startSocksFixture } from './fixtures/socks.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { assertFailure, attempt, failure, proxyRecord } from './helpers/upstream.ts';

/** Waiting for a free connection inside Rota is Rota's queue, not the proxy's fault. */
describe('a deadline reached in the local queue', () => {
  let target: TargetServer;
  let proxy: ForwardProxy;
  let cache: DispatcherCache;
  before(async () => {
    target = await startTarget();
    proxy = await startForwardProxy();
    cache = new DispatcherCache({ connectTimeoutMs: 1_000, connections: 1 });
  });
  after(async () => {
    await cache.closeAll();
    await Promise.all([target.close(), proxy.close()]);
  });

  it('is queue_timeout: not a proxy fault, and the request never left', async () => {
    const d = cache.get(proxyRecord('http', proxy.port));
    const busy = attempt(d, target.url('/slow?ms=800'), { timeoutMs: 5_000 });
    await new Promise((r) => setTimeout(r, 100));
    const err = await failure(attempt(d, target.url('/json'), { timeoutMs: 200 }));
    assertFailure(err, { kind: 'queue_timeout', proxyFault: false, mayHaveReachedTarget: false });
    assert.equal((await busy).statusCode, 200);
    assert.equal(target.count('GET', '/json'), 0);
  });
});

/** A deleted proxy's requests get a grace period, then their sockets end: nothing runs on through it. */
describe('closing a proxy dispatcher', () => {
  it('lets a request still in flight finish within the grace (http and socks5 proxies)', async () => {
    const target = await startTarget();
    const slow = await startForwardProxy({ delayMs: 300 });
    const socks = await startSocksFixture();
    const cache = new DispatcherCache({ connectTimeoutMs: 1_000, closeGraceMs: 3_000 });
    try {
      for (const record of [proxyRecord('http', slow.port), proxyRecord('socks5', socks.port)]) {
        const inFlight = attempt(cache.get(record), target.url('/slow?ms=300'), { timeoutMs: 5_000 });
        await new Promise((r) => setTimeout(r, 100));
        const closed = cache.close(record.id);
        assert.equal((await inFlight).statusCode, 200, record.protocol);
        await closed;
      }
    } finally {
      await cache.closeAll();
      await Promise.all([target.close(), slow.close(), socks.close()]);
    }
  });

  it('ends a request still in flight once the grace has passed', async () => {
    const target = await startTarget();
    const slow = await startForwardProxy({ delayMs: 1_000 });
    const cache = new DispatcherCache({ connectTimeoutMs: 1_000, closeGraceMs: 100 });
    try {
      const record = proxyRecord('http', slow.port);
      const started = performance.now();
      const inFlight = failure(attempt(cache.get(record), target.url('/json'), { timeoutMs: 5_000 }));
      await new Promise((r) => setTimeout(r, 200));
      await cache.close(record.id);
      const err = await inFlight;
      assert.equal(err.kind, 'aborted');
      assert.ok(performance.now() - started < 900, 'cut at the grace, not when the proxy answered');
    } finally {
      await cache.closeAll();
      await Promise.all([target.close(), slow.close()]);
    }
  });
});
