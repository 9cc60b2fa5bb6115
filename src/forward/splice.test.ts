import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';
import { test } from 'node:test';
import { IdleSweeper } from './idle-sweep.ts';
import { splice } from './splice.ts';

/*
 * The client → upstream direction of a splice (carry): an upload larger than the sockets' buffers to an
 * upstream that keeps stopping reading arrives whole and in order, the client's socket is paused meanwhile
 * (backpressure, not memory), and the upload's end travels on as a FIN.
 */

async function listen(onSocket: (s: net.Socket) => void): Promise<net.Server> {
  const server = net.createServer(onSocket);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

const portOf = (s: net.Server) => (s.address() as net.AddressInfo).port;

test('an upload to a slow upstream arrives whole, with the client paused meanwhile, and ends', async () => {
  const payload = randomBytes(16 * 1024 * 1024);
  const hash = createHash('sha256');
  let received = 0;
  let uploaded = () => {};
  const done = new Promise<void>((resolve) => {
    uploaded = resolve;
  });
  const upstreamServer = await listen((up) => {
    up.on('data', (b: Buffer) => {
      hash.update(b);
      received += b.length;
      // Stop reading now and then: the splice must hold the client back, not buffer the upload.
      if (received % (4 * 1024 * 1024) < b.length) {
        up.pause();
        setTimeout(() => up.resume(), 100);
      }
    });
    up.once('end', () => {
      up.end();
      uploaded();
    });
  });
  const servers = [upstreamServer];
  let sawPaused = false;
  const front = await listen((accepted) => {
    const upstream = net.connect(portOf(upstreamServer), '127.0.0.1');
    upstream.once('connect', () => {
      splice(accepted, upstream, new IdleSweeper(10_000), () => {});
      const watch = setInterval(() => {
        if (accepted.isPaused()) sawPaused = true;
      }, 5);
      accepted.once('close', () => clearInterval(watch));
    });
  });
  servers.push(front);
  const client = net.connect(portOf(front), '127.0.0.1');
  client.resume();
  client.end(payload);
  await Promise.race([
    done,
    new Promise((_, reject) =>
      setTimeout(() => reject(new Error('upload not through in 20 s')), 20_000).unref(),
    ),
  ]);
  assert.equal(received, payload.length);
  assert.equal(hash.digest('hex'), createHash('sha256').update(payload).digest('hex'));
  assert.ok(sawPaused, 'the client socket was never paused: no backpressure');
  client.destroy();
  for (const s of servers) s.close();
});
