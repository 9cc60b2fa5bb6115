import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import type { TestApp } from './helpers/app.ts';
import { addProxy, engineApp, getProxy, waitUntil } from './helpers/engine.ts';

/*
 * The caller's own connection, over a real listening socket (inject has none): a caller that goes away
 * cancels its upstream attempt, and keep-alive callers do not pile listeners on their socket.
 */

let target: TargetServer;
let proxy: ForwardProxy;
let t: TestApp;
let base: string;
let proxyId: string;
const serverSockets: net.Socket[] = [];

before(async () => {
  [target, proxy] = await Promise.all([startTarget(), startForwardProxy()]);
  t = await engineApp();
  t.app.server.on('connection', (s: net.Socket) => serverSockets.push(s));
  base = await t.app.listen({ host: '127.0.0.1', port: 0 });
  proxyId = await addProxy(t, `http://127.0.0.1:${proxy.port}`);
});
after(async () => {
  await t.close();
  await Promise.all([target.close(), proxy.close()]);
});

function post(agent: http.Agent, body: object): { done: Promise<number>; req: http.ClientRequest } {
  const payload = JSON.stringify(body);
  const req = http.request(`${base}/api/v1/request`, {
    method: 'POST',
    agent,
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
  });
  const done = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
  req.end(payload);
  return { done, req };
}

describe('the caller connection', () => {
  test('many requests on one keep-alive connection add no lasting listeners to it', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const before = serverSockets.length;
      for (let i = 0; i < 15; i++) {
        assert.equal(await post(agent, { url: target.url('/json').href }).done, 200);
      }
      assert.equal(serverSockets.length, before + 1, 'one connection carried them all');
      const socket = serverSockets.at(-1);
      assert.ok(socket);
      assert.ok(socket.listenerCount('close') < 5, `close listeners: ${socket.listenerCount('close')}`);
    } finally {
      agent.destroy();
    }
  });

  test('a caller that goes away cancels the upstream attempt, which is not held against the proxy', async () => {
    const agent = new http.Agent({ keepAlive: false });
    const statsBefore = (await getProxy(t, proxyId)).stats;
    const { done, req } = post(agent, { url: target.url('/slow?ms=2500').href, timeout: 5 });
    done.catch(() => {});
    await waitUntil(() => target.count('GET', '/slow') >= 1);
    const socketsBefore = proxy.openSockets;
    assert.ok(socketsBefore >= 1);
    const gone = performance.now();
    req.destroy();
    await waitUntil(() => proxy.openSockets < socketsBefore, 1_500);
    assert.ok(performance.now() - gone < 1_500, 'cancelled, not left to run to the end');
    const p = await getProxy(t, proxyId);
    assert.deepEqual(p.stats, statsBefore, 'an abandoned attempt counts neither way');
    assert.equal(p.health, 'healthy');
    agent.destroy();
  });
});
