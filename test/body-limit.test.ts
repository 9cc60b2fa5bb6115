import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { makeApp, type TestApp } from './helpers/app.ts';

/*
 * A body over its limit (ROTA_MAX_IMPORT_BYTES for the import, ROTA_MAX_BODY_BYTES for the API's JSON)
 * is refused before it has all arrived, and the connection then closes: the client, still sending, must
 * read the 413 all the same, never a reset or a broken pipe in its place. Over a real socket, many times.
 */

const RUNS = 20;
let t: TestApp;
let port: number;

before(async () => {
  t = await makeApp({ ROTA_MAX_IMPORT_BYTES: '4096', ROTA_MAX_BODY_BYTES: '4096' });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  port = (t.app.server.address() as AddressInfo).port;
});
after(() => t.close());

interface Outcome {
  /** What was read before any error. */
  readonly text: string;
  readonly error: string | null;
}

const CHUNK = Buffer.alloc(64 * 1024, 0x23);

/**
 * A raw client: the head, then `total` bytes in 64 KiB writes, one per loop turn, never waiting for an
 * answer (declared with Content-Length, or chunked).
 */
function rawUpload(path: string, type: string, total: number, chunked: boolean): Promise<Outcome> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    let text = '';
    let error: string | null = null;
    s.on('data', (c: Buffer) => {
      text += c.toString('latin1');
    });
    s.on('error', (e: NodeJS.ErrnoException) => {
      if (!text.includes('\r\n\r\n')) error ??= e.code ?? e.message;
    });
    s.once('close', () => resolve({ text, error }));
    const length = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${total}`;
    s.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: ${type}\r\n${length}\r\n\r\n`);
    let sent = 0;
    const tick = () => {
      if (s.destroyed || !s.writable) return;
      if (sent >= total) return void s.end(chunked ? '0\r\n\r\n' : '');
      const piece = CHUNK.subarray(0, Math.min(CHUNK.length, total - sent));
      sent += piece.length;
      s.write(
        chunked
          ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')])
          : piece,
      );
      setImmediate(tick);
    };
    tick();
  });
}

/** node:http's client streaming `total` bytes, as fast as the socket takes them. */
function nodeUpload(path: string, type: string, total: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      path,
      method: 'POST',
      agent: false,
      headers: { 'content-type': type, 'content-length': total },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString();
      });
      res.on('end', () => resolve({ text: `HTTP/1.1 ${res.statusCode} \r\n\r\n${body}`, error: null }));
      res.on('error', () => resolve({ text: `HTTP/1.1 ${res.statusCode} \r\n\r\n${body}`, error: null }));
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ text: '', error: e.code ?? e.message }));
    let sent = 0;
    const tick = () => {
      if (req.destroyed) return;
      if (sent >= total) return void req.end();
      sent += CHUNK.length;
      if (req.write(CHUNK)) setImmediate(tick);
      else req.once('drain', tick);
    };
    tick();
  });
}

function assert413(o: Outcome, what: string): void {
  assert.equal(o.error, null, `${what}: ${o.error} before the answer`);
  assert.match(o.text, /^HTTP\/1\.1 413 /, what);
  const body = JSON.parse(o.text.slice(o.text.indexOf('\r\n\r\n') + 4)) as { error: { code: string } };
  assert.equal(body.error.code, 'PAYLOAD_TOO_LARGE', what);
}

const BIG = 8 * 1024 * 1024;

describe('a body over its limit, still being sent', () => {
  test(`import over ROTA_MAX_IMPORT_BYTES: the client reads the 413, ${RUNS} times each way`, async () => {
    for (let i = 0; i < RUNS; i++) {
      assert413(await rawUpload('/api/v1/proxies/import', 'text/plain', BIG, false), `raw, run ${i}`);
      assert413(await rawUpload('/api/v1/proxies/import', 'text/plain', BIG, true), `chunked, run ${i}`);
      assert413(await nodeUpload('/api/v1/proxies/import', 'text/plain', BIG), `node:http, run ${i}`);
    }
    assert.equal(t.services.pool.size, 0);
  });

  test(`JSON over ROTA_MAX_BODY_BYTES: the client reads the 413, ${RUNS} times each way`, async () => {
    for (let i = 0; i < RUNS; i++) {
      assert413(await rawUpload('/api/v1/proxies', 'application/json', BIG, false), `raw, run ${i}`);
      assert413(await rawUpload('/api/v1/proxies', 'application/json', BIG, true), `chunked, run ${i}`);
      assert413(await nodeUpload('/api/v1/proxies', 'application/json', BIG), `node:http, run ${i}`);
    }
  });

  test('a client that never stops sending is cut off within seconds, after its 413', async () => {
    const started = Date.now();
    const o = await rawUpload('/api/v1/proxies/import', 'text/plain', 64 * 1024 * 1024 * 1024, false);
    assert.match(o.text, /^HTTP\/1\.1 413 /);
    assert.ok(Date.now() - started < 10_000, `closed after ${Date.now() - started} ms`);
  });
});
