import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { proxyRecord } from '../../test/helpers/upstream.ts';
import { type DirectReads, directReadsOf } from '../upstream/direct-reads.ts';
import { connectPlain } from '../upstream/plain-connect.ts';
import { IdleSweeper } from './idle-sweep.ts';
import { splice } from './splice.ts';

/*
 * Tunnel sockets that read into memory of their own, through the real CONNECT handshake and the real
 * splice: every byte arrives, in order, whatever the client's pace, with several tunnels at once (they
 * share one scratch buffer), and quiet tunnels hold no buffer of their own.
 */

const payloads = new Map<string, Buffer>();
let proxy: net.Server;
let proxyPort = 0;

/** A CONNECT-only "proxy" that answers 200 and then streams the payload named by the authority. */
before(async () => {
  proxy = net.createServer((s) => {
    let head = '';
    const onData = (b: Buffer) => {
      head += b.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      s.off('data', onData);
      const name = /^CONNECT ([^:]+):/.exec(head)?.[1] ?? '';
      const body = payloads.get(name) ?? Buffer.alloc(0);
      // The first bytes of the tunnel in the same write as the answer: the handshake must hand them on.
      s.write(
        Buffer.concat([Buffer.from('HTTP/1.1 200 Connection established\r\n\r\n'), body.subarray(0, 1000)]),
      );
      let at = 1000;
      const more = () => {
        while (at < body.length) {
          const end = Math.min(at + 100_000, body.length);
          const ok = s.write(body.subarray(at, end));
          at = end;
          if (!ok) return void s.once('drain', more);
        }
        s.end();
      };
      more();
    };
    s.on('data', onData);
    s.on('error', () => {});
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  proxyPort = (proxy.address() as net.AddressInfo).port;
});

after(() => new Promise<void>((r) => proxy.close(() => r())));

interface Received {
  readonly sha: string;
  readonly bytes: number;
  readonly reads: DirectReads;
}

/**
 * One tunnel to payload `name`, spliced to a real client socket that reads with pauses when `slow`;
 * `spliceAfterMs`: the tunnel is spliced only that long after it opened (the upstream may be done by then).
 */
async function download(name: string, slow: boolean, spliceAfterMs = 0): Promise<Received> {
  const record = proxyRecord('http', proxyPort);
  const target = { hostname: name, port: 443 };
  const limits = { deadline: performance.now() + 5_000 };
  const upstream = await connectPlain(record, target, null, { connectTimeoutMs: 5_000, tls: {} }, limits);
  const reads = directReadsOf(upstream);
  assert.ok(reads);
  const front = net.createServer();
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  front.once('connection', (accepted) => {
    setTimeout(() => splice(accepted, upstream, new IdleSweeper(10_000), () => {}), spliceAfterMs);
  });
  const client = net.connect((front.address() as net.AddressInfo).port, '127.0.0.1');
  const hash = createHash('sha256');
  let bytes = 0;
  let pauses = slow ? 5 : 0;
  await new Promise<void>((resolve, reject) => {
    client.on('data', (b: Buffer) => {
      hash.update(b);
      bytes += b.length;
      // Stop reading now and then: the tunnel must hold back, not lose or reorder bytes.
      if (pauses > 0 && bytes > (6 - pauses) * 2_000_000) {
        pauses--;
        client.pause();
        setTimeout(() => client.resume(), 150);
      }
    });
    client.once('end', resolve);
    client.once('error', reject);
  });
  client.destroy();
  front.close();
  return { sha: hash.digest('hex'), bytes, reads };
}

function payload(name: string, size: number): string {
  const b = randomBytes(size);
  payloads.set(name, b);
  return createHash('sha256').update(b).digest('hex');
}

test('a large download arrives whole and in order, to a client that keeps pausing', async () => {
  const want = payload('big', 24 * 1024 * 1024 + 123);
  const got = await download('big', true);
  assert.equal(got.bytes, 24 * 1024 * 1024 + 123);
  assert.equal(got.sha, want);
});

test('a busy tunnel gives its own buffer back when it ends', async () => {
  payload('busy', 8 * 1024 * 1024);
  const got = await download('busy', false);
  assert.equal(got.bytes, 8 * 1024 * 1024);
  for (let i = 0; i < 100 && got.reads.holdsBuffer; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(got.reads.holdsBuffer, false);
});

test('several tunnels at once (one shared scratch buffer) each get exactly their own bytes', async () => {
  const names = ['t1', 't2', 't3', 't4'];
  const want = names.map((n, i) => payload(n, 6 * 1024 * 1024 + i * 7919));
  const got = await Promise.all(names.map((n, i) => download(n, i % 2 === 0)));
  assert.deepEqual(
    got.map((g) => g.sha),
    want,
  );
});

test('a tunnel that only carries short reads never takes a buffer of its own', async () => {
  payload('small', 30_000);
  const got = await download('small', false);
  assert.equal(got.bytes, 30_000);
  assert.equal(got.reads.holdsBuffer, false);
});

test('an upstream that has sent everything and finished before the splice still ends the client', async () => {
  const want = payload('early', 700); // all of it in the CONNECT answer's write, then FIN
  const got = await download('early', false, 100);
  assert.equal(got.bytes, 700);
  assert.equal(got.sha, want);
});
