import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { addUpstream, type ListeningApp, listeningApp, viaProxy } from './helpers/forward.ts';

/* ROTA_UPSTREAM_ALLOW: a proxy whose host is not listed is never connected to, on any path. */

let target: TargetServer;
let proxy: ForwardProxy;
let t: ListeningApp;

before(async () => {
  [target, proxy] = await Promise.all([startTarget(), startForwardProxy()]);
  t = await listeningApp({ ROTA_UPSTREAM_ALLOW: '127.0.0.2/32,proxy.internal', ROTA_MAX_RETRIES: '1' });
  await addUpstream(t, { url: `http://127.0.0.1:${proxy.port}` });
  await addUpstream(t, { url: `socks5://127.0.0.1:${proxy.port}`, country: 'DE' });
});
after(async () => {
  await t.close();
  await Promise.all([target.close(), proxy.close()]);
});

test('a proxy outside ROTA_UPSTREAM_ALLOW fails at once and no connection reaches it', async () => {
  const api = await t.app.inject({
    method: 'POST',
    url: '/api/v1/request',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ url: target.url('/json').href }),
  });
  assert.equal(api.statusCode, 502, api.body);
  assert.match(api.body, /"kind":"connect"/);
  const listener = await viaProxy(t.httpPort, target.url('/json').href, {
    headers: { 'x-rota-country': 'DE' },
  });
  assert.equal(listener.status, 502);
  assert.equal(proxy.connections, 0, 'not one connection to a proxy that is not allowed');
});
