import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { addUpstream, type ListeningApp, listeningApp, viaProxy } from './helpers/forward.ts';

/*
 * A proxy that closes a kept-alive connection right after answering, without `Connection: close` (what
 * tinyproxy 1.11 does): a request written on that connection in the meantime fails before any answer.
 * That is no fault of the proxy, and an idempotent request must not fail because of it.
 */

let closer: net.Server;
let port: number;
let t: ListeningApp;
let id: string;

before(async () => {
  closer = net.createServer((s) => {
    s.on('error', () => {});
    let buf = '';
    s.on('data', (c: Buffer) => {
      buf += c.toString('latin1');
      if (!buf.includes('\r\n\r\n')) return;
      buf = '';
      s.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok');
      setTimeout(() => s.destroy(), 1);
    });
  });
  await new Promise<void>((resolve) => closer.listen(0, '127.0.0.1', resolve));
  port = (closer.address() as net.AddressInfo).port;
  t = await listeningApp({ ROTA_BREAKER_FAILURE_THRESHOLD: '3' });
  id = await addUpstream(t, { url: `http://127.0.0.1:${port}` });
});

after(async () => {
  await t.close();
  closer.close();
});

test('back-to-back requests through a proxy that closes kept-alive connections all succeed', async () => {
  const statuses = new Map<number, number>();
  for (let i = 0; i < 300; i++) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/request',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ url: `http://127.0.0.1:9/x${i}` }),
    });
    statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
  }
  for (let i = 0; i < 100; i++) {
    const r = await viaProxy(t.httpPort, `http://127.0.0.1:9/y${i}`);
    statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  }
  assert.deepEqual([...statuses], [[200, 400]]);
  assert.equal(t.services.pool.get(id)?.stats.failed, 0, 'the proxy is never blamed');
  assert.equal(t.services.breakers.state(id), 'closed');
});
