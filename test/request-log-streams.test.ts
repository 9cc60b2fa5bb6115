import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { CallRecord } from '../src/metrics/calls.ts';
import { type ListeningApp, listeningApp } from './helpers/forward.ts';

/*
 * GET requests/stream under load from its clients (src/http/routes/requests.ts): at most 4 streams from
 * one client address and 32 in all, so one client cannot take them all; a client that stops reading is
 * dropped once it is 1 MiB behind, while a client that reads gets every event; a dropped or closed
 * stream gives its place back.
 */

let t: ListeningApp;
let apiPort: number;

before(async () => {
  t = await listeningApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  apiPort = (t.app.server.address() as { port: number }).port;
});
after(async () => {
  await t.close();
});

/** A raw stream client from `from`: the status, what it has read, and whether the server ended it. */
interface RawStream {
  readonly status: number;
  readonly socket: net.Socket;
  text(): string;
  readonly ended: Promise<void>;
}

async function openFrom(from: string): Promise<RawStream> {
  const socket = net.connect({ host: '127.0.0.1', port: apiPort, localAddress: from });
  let text = '';
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => {});
  socket.setEncoding('latin1');
  socket.on('data', (c: string) => {
    text += c;
  });
  socket.write(
    'GET /api/v1/requests/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n',
  );
  for (let i = 0; i < 200 && !/\r\n\r\n/.test(text); i++) await new Promise((r) => setTimeout(r, 10));
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  return { status, socket, text: () => text, ended };
}

let n = 0;
/** A finished call of `bytes` or so in the log, told to every stream at once (a failed call). */
function logCall(pathBytes: number): void {
  const call: CallRecord = {
    id: 1_000_000 + n++,
    ok: false,
    errorCode: 'PROXY_FAILOVER_EXHAUSTED',
    latencyMs: 3,
    attempts: [{ proxyId: 'p1', attempt: 1, outcome: 'proxy_error', latencyMs: 3 }],
    door: 'http',
    method: 'GET',
    scheme: 'http',
    host: 'stream.example',
    port: 80,
    path: `/${'x'.repeat(pathBytes)}`,
  };
  t.services.requestLog.onCall(call);
}

const events = (text: string) => text.split('\nevent: request\n').length - 1;
/** The most a loopback connection holds in the kernel: the sender's and the receiver's buffers. */
const kernelBytes = () =>
  ['/proc/sys/net/ipv4/tcp_wmem', '/proc/sys/net/ipv4/tcp_rmem']
    .map((f) => Number(readFileSync(f, 'utf8').trim().split(/\s+/)[2]))
    .reduce((a, b) => a + b, 0);

describe('the request log stream and its clients', () => {
  test('four streams from one address; others are still served; 32 in all', async () => {
    const mine = await Promise.all([1, 2, 3, 4].map(() => openFrom('127.0.0.61')));
    const others: RawStream[] = [];
    try {
      assert.deepEqual(
        mine.map((s) => s.status),
        [200, 200, 200, 200],
      );
      const fifth = await openFrom('127.0.0.61');
      others.push(fifth);
      assert.equal(fifth.status, 503);
      assert.match(fifth.text(), /"code":"TOO_MANY_CONNECTIONS"/);
      for (let a = 62; a < 69; a++)
        others.push(...(await Promise.all([1, 2, 3, 4].map(() => openFrom(`127.0.0.${a}`)))));
      assert.ok(
        others.slice(1).every((s) => s.status === 200),
        'other addresses get theirs: 32 open',
      );
      const late = await openFrom('127.0.0.70');
      others.push(late);
      assert.equal(late.status, 503);
      assert.match(late.text(), /"code":"SERVICE_UNAVAILABLE"/);
      // Closed streams give their places back.
      for (const s of mine) s.socket.destroy();
      let again = await openFrom('127.0.0.70');
      for (let i = 0; i < 50 && again.status !== 200; i++) {
        again.socket.destroy();
        await new Promise((r) => setTimeout(r, 20));
        again = await openFrom('127.0.0.70');
      }
      others.push(again);
      assert.equal(again.status, 200);
    } finally {
      for (const s of [...mine, ...others]) s.socket.destroy();
    }
  });

  test('a client that stops reading is dropped; one that reads gets every event; the place comes back', async () => {
    const slow = await openFrom('127.0.0.71');
    const fast = await openFrom('127.0.0.72');
    try {
      assert.deepEqual([slow.status, fast.status], [200, 200]);
      slow.socket.pause();
      // Enough for the kernel's buffers on both sides and 1 MiB more, twice over.
      const target = 2 * (kernelBytes() + (1 << 20));
      const PATH = 4_000;
      let sent = 0;
      while (sent * PATH < target) {
        // Small bursts, a turn of the loop between them: the reading client (in this process) keeps up.
        for (let i = 0; i < 50; i++, sent++) logCall(PATH);
        await new Promise((r) => setImmediate(r));
      }
      for (let i = 0; i < 500 && events(fast.text()) < sent; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(events(fast.text()), sent, 'the reading client got every event');
      slow.socket.resume();
      const deadline = new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('the slow client was never dropped')), 10_000).unref(),
      );
      await Promise.race([slow.ended, deadline]);
      const got = events(slow.text());
      assert.ok(got < sent, `the slow client was dropped (${got} of ${sent} events)`);
      // The reading client is still served, and the dropped one's place is free again.
      logCall(10);
      for (let i = 0; i < 200 && events(fast.text()) <= sent; i++)
        await new Promise((r) => setTimeout(r, 10));
      assert.equal(events(fast.text()), sent + 1);
      const back = await Promise.all([1, 2, 3, 4].map(() => openFrom('127.0.0.71')));
      assert.deepEqual(
        back.map((s) => s.status),
        [200, 200, 200, 200],
      );
      for (const s of back) s.socket.destroy();
    } finally {
      slow.socket.destroy();
      fast.socket.destroy();
    }
  });

  test('closing the server ends the open streams: they do not hold its shutdown', async () => {
    const other = await listeningApp();
    await other.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (other.app.server.address() as { port: number }).port;
    const socket = net.connect({ host: '127.0.0.1', port });
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => {
      text += c;
    });
    socket.on('error', () => {});
    const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(
      'GET /api/v1/requests/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n',
    );
    for (let i = 0; i < 200 && !text.includes('\r\n\r\n'); i++) await new Promise((r) => setTimeout(r, 10));
    assert.match(text, /^HTTP\/1\.1 200/);
    const t0 = performance.now();
    await other.close();
    assert.ok(performance.now() - t0 < 3_000, `closed in ${(performance.now() - t0).toFixed(0)} ms`);
    await ended;
  });
});
