import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import type { TestApp } from './helpers/app.ts';
import { addProxy, deleteProxy, engineApp, getProxy, proxied, proxiedOk } from './helpers/engine.ts';

/**
 * The per-attempt share of the deadline protects against proxies that accept and never answer; it must
 * not cut a slow target short on proxies that have proven they work, nor blame them for it.
 */
describe('slow targets and proxies that go away mid-call', () => {
  let target: TargetServer;
  let proxies: ForwardProxy[];
  let t: TestApp;
  before(async () => {
    target = await startTarget();
    proxies = await Promise.all([startForwardProxy(), startForwardProxy(), startForwardProxy()]);
  });
  after(async () => {
    await t?.close();
    await Promise.all([target.close(), ...proxies.map((p) => p.close())]);
  });

  test('a target slower than an attempt share succeeds through a proven proxy, on one attempt', async () => {
    t = await engineApp({ ROTA_MAX_RETRIES: '3' });
    const ids: string[] = [];
    for (const p of proxies) ids.push(await addProxy(t, `http://127.0.0.1:${p.port}`));
    // Prove every proxy with a fast call first.
    for (let i = 0; i < 3; i++) await proxiedOk(t, { url: target.url('/json').toString() });
    const before = target.count('GET', '/slow');
    // 3 attempts in 4 s would give the first only ~1.3 s: the target needs 2 s.
    const d = await proxiedOk(t, { url: target.url('/slow?ms=2000').toString(), timeout: 4 });
    assert.equal(d.status_code, 200);
    assert.equal(d.attempts, 1);
    assert.equal(target.count('GET', '/slow') - before, 1, 'the target saw the request once');
    for (const id of ids) assert.equal((await getProxy(t, id)).health, 'healthy');
    await t.close();
  });

  test('a proxy deleted while a GET is in flight does not end the call: another proxy answers', async () => {
    const slow = await startForwardProxy({ delayMs: 1_500 });
    try {
      // In-flight requests of a deleted proxy get a grace period (5 s by default) before being cut.
      t = await engineApp({ ROTA_MAX_RETRIES: '3' }, { upstreamCloseGraceMs: 100 });
      const slowId = await addProxy(t, `http://127.0.0.1:${slow.port}`); // first in round-robin order
      await addProxy(t, `http://127.0.0.1:${proxies[0]!.port}`);
      const call = proxied(t, { url: target.url('/json').toString(), timeout: 10 });
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await deleteProxy(t, slowId)).statusCode, 204);
      const res = await call;
      assert.equal(res.statusCode, 200, res.body);
      const data = res.json().data;
      assert.equal(data.proxy_used, `http://127.0.0.1:${proxies[0]!.port}`);
      // The caller went through two proxies; the cut attempt blames neither (no proxy is at fault for
      // being deleted), so the metrics record only the one that answered.
      assert.equal(data.attempts, 2);
      const summary = (await t.app.inject({ url: '/api/v1/metrics/retries' })).json().data;
      assert.equal(summary.total_retries, 0, JSON.stringify(summary));
      assert.deepEqual(summary.success_by_attempt, { '1': 1 }, JSON.stringify(summary));
    } finally {
      await slow.close();
    }
  });
});
