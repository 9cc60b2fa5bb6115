import assert from 'node:assert/strict';
import http from 'node:http';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { type Fixture, listen, SocketTracker, stop } from './fixtures/server.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import type { TestApp } from './helpers/app.ts';
import {
  addProxy,
  breakerState,
  deleteProxy,
  engineApp,
  getProxy,
  NO_BACKOFF,
  proxied,
  proxiedOk,
  putPolicy,
  waitUntil,
} from './helpers/engine.ts';
import { closedPort } from './helpers/real-proxies.ts';

/*
 * What counts against a proxy (only its own faults), and when a call may be replayed on another proxy
 * (POST/PATCH only when the request certainly never left the gateway).
 */

/**
 * A forward proxy that forwards the request to the target, waits for the target's answer, and then
 * hangs up on the gateway instead of relaying it: the request reached the target, the caller never
 * hears back. Exactly the case where replaying a POST would run it twice.
 */
async function startDyingProxy(): Promise<Fixture & { forwarded: number }> {
  let forwarded = 0;
  const server = http.createServer((req, res) => {
    const out = http.request(new URL(req.url ?? ''), { method: req.method, headers: req.headers }, (up) => {
      forwarded++;
      up.resume();
      res.socket?.destroy();
    });
    out.on('error', () => res.socket?.destroy());
    req.pipe(out);
  });
  const tracker = new SocketTracker(server);
  const port = await listen(server);
  return {
    port,
    get connections() {
      return tracker.connections;
    },
    get forwarded() {
      return forwarded;
    },
    close: () => stop(server, tracker),
  };
}

let target: TargetServer;
let live: ForwardProxy;
let t: TestApp;

before(async () => {
  [target, live] = await Promise.all([startTarget(), startForwardProxy()]);
});
after(async () => {
  await Promise.all([target.close(), live.close()]);
});
beforeEach(async () => {
  t = await engineApp({ ROTA_BREAKER_FAILURE_THRESHOLD: '2', ROTA_MAX_RETRIES: '3' });
  await putPolicy(t, NO_BACKOFF);
});
afterEach(async () => {
  await t.close();
});

describe("a target's error status is its answer, never the proxy's fault", () => {
  test('401 comes back as status_code in a 200 envelope; the proxy stays healthy', async () => {
    const ids = [await addProxy(t, `http://127.0.0.1:${live.port}`)];
    for (let i = 0; i < 5; i++) {
      const d = await proxiedOk(t, { url: target.url('/status/401').href });
      assert.equal(d.status_code, 401);
      assert.equal(d.body, 'status 401');
      assert.equal(d.attempts, 1, '401 is not a retryable status');
    }
    const p = await getProxy(t, ids[0] ?? '');
    assert.equal(p.health, 'healthy');
    assert.deepEqual([p.stats.total_requests, p.stats.failed_requests], [5, 0]);
    assert.equal(await breakerState(t, ids[0] ?? ''), 'closed');
  });

  test('503 in retry_status_codes is retried on the other proxy, then returned as is', async () => {
    const other = await startForwardProxy();
    try {
      const ids = [
        await addProxy(t, `http://127.0.0.1:${live.port}`),
        await addProxy(t, `http://127.0.0.1:${other.port}`),
      ];
      const before = target.count('GET', '/status/503');
      for (let i = 0; i < 4; i++) {
        const d = await proxiedOk(t, { url: target.url('/status/503').href });
        assert.equal(d.status_code, 503);
        assert.equal(d.attempts, 2, 'each retry on a different proxy, and there are two');
      }
      assert.equal(target.count('GET', '/status/503') - before, 8);
      for (const id of ids) {
        const p = await getProxy(t, id);
        assert.equal(p.health, 'healthy');
        assert.equal(p.stats.failed_requests, 0);
        assert.equal(await breakerState(t, id), 'closed');
      }
      await putPolicy(t, { retry_status_codes: [502] });
      const once = await proxiedOk(t, { url: target.url('/status/503').href });
      assert.deepEqual([once.status_code, once.attempts], [503, 1]);
    } finally {
      await other.close();
    }
  });
});

describe('replaying non-idempotent calls', () => {
  test('a POST is not replayed once it may have reached the target', async () => {
    const dying = await startDyingProxy();
    try {
      await addProxy(t, `http://127.0.0.1:${dying.port}`);
      await addProxy(t, `http://127.0.0.1:${live.port}`);
      const liveBefore = live.requests.length;
      const res = await proxied(t, { url: target.url('/echo').href, method: 'POST', body: 'pay once' });
      assert.equal(res.statusCode, 502, res.body);
      const err = res.json().error;
      assert.equal(err.code, 'PROXY_ERROR');
      assert.equal(err.details.reason, 'non_idempotent');
      assert.equal(err.details.attempts.length, 1);
      assert.equal(target.count('POST', '/echo'), 1, 'the target saw the POST exactly once');
      assert.equal(live.requests.length, liveBefore, 'never sent to the second proxy');
    } finally {
      await dying.close();
    }
  });

  test('a PUT in the same situation is replayed on the next proxy', async () => {
    const dying = await startDyingProxy();
    try {
      await addProxy(t, `http://127.0.0.1:${dying.port}`);
      await addProxy(t, `http://127.0.0.1:${live.port}`);
      const before = target.count('PUT', '/echo');
      const d = await proxiedOk(t, { url: target.url('/echo').href, method: 'PUT', body: 'idempotent' });
      assert.deepEqual([d.status_code, d.attempts], [200, 2]);
      assert.equal(target.count('PUT', '/echo') - before, 2);
    } finally {
      await dying.close();
    }
  });

  test('with retry_non_idempotent a POST is replayed too', async () => {
    const dying = await startDyingProxy();
    try {
      await addProxy(t, `http://127.0.0.1:${dying.port}`);
      await addProxy(t, `http://127.0.0.1:${live.port}`);
      await putPolicy(t, { retry_non_idempotent: true });
      const before = target.count('POST', '/echo');
      const d = await proxiedOk(t, { url: target.url('/echo').href, method: 'POST', body: 'twice is ok' });
      assert.deepEqual([d.status_code, d.attempts], [200, 2]);
      assert.equal(target.count('POST', '/echo') - before, 2);
    } finally {
      await dying.close();
    }
  });

  test('a POST whose first proxy refused the connection is retried on another proxy', async () => {
    const closed = await closedPort();
    const deadId = await addProxy(t, `http://127.0.0.1:${closed}`);
    await addProxy(t, `http://127.0.0.1:${live.port}`);
    for (const method of ['POST', 'PATCH']) {
      const before = target.count(method, '/echo');
      const d = await proxiedOk(t, { url: target.url('/echo').href, method, body: 'once' });
      assert.equal(d.status_code, 200);
      assert.equal(JSON.parse(d.body).body, 'once');
      assert.equal(target.count(method, '/echo') - before, 1);
      // Round-robin comes back to the dead proxy first on each call.
      assert.equal(d.attempts, 2, 'the refused proxy first, then the live one');
    }
    assert.equal((await getProxy(t, deadId)).stats.failed_requests, 2);
  });
});

describe('deleting a proxy', () => {
  test("closes its dispatcher: the proxy's sockets go to zero", async () => {
    const own = await startForwardProxy();
    try {
      const id = await addProxy(t, `http://127.0.0.1:${own.port}`);
      for (let i = 0; i < 3; i++) await proxiedOk(t, { url: target.url('/json').href });
      assert.ok(own.openSockets >= 1, 'a keep-alive connection stays open after the calls');
      assert.equal(own.connections, 1, 'and it was reused');
      assert.equal((await deleteProxy(t, id)).statusCode, 204);
      await waitUntil(() => own.openSockets === 0);
      const res = await proxied(t, { url: target.url('/json').href });
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().error.code, 'PROXY_POOL_EMPTY');
    } finally {
      await own.close();
    }
  });
});
