import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { test } from 'node:test';
import { type LingerBounds, lingerOnClose } from './linger.ts';

/** A server that refuses every request at once with 413 and Connection: close, body unread. */
async function refusing(bounds: LingerBounds): Promise<{ port: number; close(): void }> {
  const server = http.createServer((req, res) => {
    lingerOnClose(req, bounds);
    res.writeHead(413, { connection: 'close', 'content-length': 2 });
    res.end('no');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/**
 * Declares `declared` bytes and sends them in 64 KiB writes, one per `everyMs`, as long as the socket
 * takes them, never stopping to read. What it read, the first error, and when the server closed.
 */
function upload(
  port: number,
  declared: number,
  everyMs: number,
): Promise<{ text: string; error: string | null; closedAfterMs: number; sent: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const s = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    let text = '';
    let error: string | null = null;
    let sent = 0;
    s.on('data', (c: Buffer) => {
      text += c.toString('latin1');
    });
    s.on('error', (e: NodeJS.ErrnoException) => {
      error ??= `${e.code} with ${JSON.stringify(text.slice(0, 12))} read`;
    });
    s.once('close', () => resolve({ text, error, closedAfterMs: Date.now() - started, sent }));
    s.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${declared}\r\n\r\n`);
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const tick = () => {
      if (s.destroyed || !s.writable) return;
      if (sent >= declared) return void s.end();
      const piece = chunk.subarray(0, Math.min(chunk.length, declared - sent));
      sent += piece.length;
      s.write(piece);
      setTimeout(tick, everyMs);
    };
    tick();
  });
}

test('the answer reaches a client still sending; the socket closes once the body has all arrived', async () => {
  const srv = await refusing({ ms: 5_000, bytes: 64 * 1024 * 1024 });
  try {
    for (let i = 0; i < 10; i++) {
      const r = await upload(srv.port, 2 * 1024 * 1024, 0);
      assert.match(r.text, /^HTTP\/1\.1 413 /);
      assert.equal(r.error, null);
      assert.equal(r.sent, 2 * 1024 * 1024);
    }
  } finally {
    srv.close();
  }
});

test('a body that does not end is read for bounds.ms at most, then the socket closes', async () => {
  const srv = await refusing({ ms: 300, bytes: 64 * 1024 * 1024 });
  try {
    const r = await upload(srv.port, 1024 * 1024 * 1024, 20);
    assert.match(r.text, /^HTTP\/1\.1 413 /);
    assert.ok(r.closedAfterMs >= 250 && r.closedAfterMs < 2_000, `closed after ${r.closedAfterMs} ms`);
  } finally {
    srv.close();
  }
});

test('a body that does not end is read for bounds.bytes more at most, then the socket closes', async () => {
  const srv = await refusing({ ms: 60_000, bytes: 1024 * 1024 });
  try {
    const r = await upload(srv.port, 1024 * 1024 * 1024, 0);
    assert.match(r.text, /^HTTP\/1\.1 413 /);
    assert.ok(r.sent < 256 * 1024 * 1024, `${r.sent} bytes taken`);
    assert.ok(r.closedAfterMs < 5_000, `closed after ${r.closedAfterMs} ms`);
  } finally {
    srv.close();
  }
});

test('a request whose body has all arrived is left to Node as it was', async () => {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const before = req.socket.destroySoon;
      lingerOnClose(req);
      assert.equal(req.socket.destroySoon, before);
      res.writeHead(413, { connection: 'close' }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const r = await upload((server.address() as AddressInfo).port, 10, 0);
    assert.match(r.text, /^HTTP\/1\.1 413 /);
  } finally {
    server.close();
  }
});
