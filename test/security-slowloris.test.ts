import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { makeApp, type TestApp } from './helpers/app.ts';

const SLOW_SOCKETS = 300;

interface Slow {
  socket: net.Socket;
  closed: boolean;
  answer: string;
}

/** A client that sends a request head one header every `dripMs`, and never finishes it. */
async function slowClient(port: number, dripMs: number): Promise<Slow> {
  const socket = net.connect(port, '127.0.0.1');
  await once(socket, 'connect');
  const slow: Slow = { socket, closed: false, answer: '' };
  socket.write('GET /api/v1/health HTTP/1.1\r\nHost: x\r\n');
  let n = 0;
  const drip = setInterval(() => {
    if (!socket.destroyed) socket.write(`X-Drip-${n++}: a\r\n`);
  }, dripMs);
  socket.on('data', (d: Buffer) => (slow.answer += d.toString('latin1')));
  socket.on('error', () => {});
  socket.on('close', () => {
    clearInterval(drip);
    slow.closed = true;
  });
  return slow;
}

async function timedHealth(port: number): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/health`, { signal: AbortSignal.timeout(5_000) });
  assert.equal(res.status, 200);
  await res.arrayBuffer();
  return performance.now() - t0;
}

describe('slow clients (slowloris)', () => {
  let t: TestApp;
  let port: number;
  let slow: Slow[] = [];
  before(async () => {
    // More sockets from one address than ROTA_MAX_CONNECTIONS_PER_IP allows by default: this test is
    // about the timeouts (security-flood.test.ts is about the caps).
    t = await makeApp({ ROTA_MAX_CONNECTIONS_PER_IP: '1000' });
  });
  after(async () => {
    for (const s of slow) s.socket.destroy();
    await t.close();
  });

  it('Rota bounds how long a request may take to arrive', () => {
    const s = t.app.server;
    assert.ok(s.requestTimeout > 0 && s.requestTimeout <= 30_000, `requestTimeout ${s.requestTimeout}`);
    assert.ok(s.headersTimeout > 0 && s.headersTimeout <= 60_000, `headersTimeout ${s.headersTimeout}`);
  });

  it('hundreds of dripping sockets neither stop normal requests nor outlive the timeouts', async () => {
    // The real timeouts are tens of seconds; the same mechanism, shortened, so that the test is quick.
    const s = t.app.server;
    s.headersTimeout = 1_000;
    s.requestTimeout = 1_500;
    // Read by Node when the server starts listening; not in @types/node.
    Object.assign(s, { connectionsCheckingInterval: 200 });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = (s.address() as net.AddressInfo).port;
    slow = await Promise.all(Array.from({ length: SLOW_SOCKETS }, () => slowClient(port, 100)));
    const times: number[] = [];
    for (let i = 0; i < 10; i++) times.push(await timedHealth(port));
    assert.ok(Math.max(...times) < 500, `normal requests took ${times.map(Math.round).join(', ')} ms`);
    const deadline = Date.now() + 4_000;
    while (slow.some((c) => !c.closed) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const open = slow.filter((c) => !c.closed).length;
    assert.equal(open, 0, `${open} slow sockets still open`);
    assert.ok(
      slow.every(
        (c) =>
          c.answer === '' || (c.answer.startsWith('HTTP/1.1 408') && c.answer.includes('"CLIENT_TIMEOUT"')),
      ),
      'closed with the 408 envelope or silently',
    );
    assert.ok((await timedHealth(port)) < 500, 'still serving');
  });
});
