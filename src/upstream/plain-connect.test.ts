import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { proxyRecord } from '../../test/helpers/upstream.ts';
import { directReadsOf } from './direct-reads.ts';
import { parseConnectStatus } from './http-proxy.ts';
import { connectPlain } from './plain-connect.ts';
import { UpstreamError } from './types.ts';

/*
 * The plain http:// CONNECT dial against a scripted proxy: the answer split across reads, tunnel bytes
 * in the answer's own read, every refusal and fault as its UpstreamError kind, the timer and the caller's
 * signal, and no socket left behind on any of them.
 */

type Script = (s: net.Socket, head: string) => void;
let script: Script = () => {};
let proxy: net.Server;
let port = 0;
const open = new Set<net.Socket>();

before(async () => {
  proxy = net.createServer((s) => {
    open.add(s);
    s.once('close', () => open.delete(s));
    s.on('error', () => {});
    let head = '';
    const onData = (b: Buffer) => {
      head += b.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      s.off('data', onData);
      script(s, head);
    };
    s.on('data', onData);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  port = (proxy.address() as net.AddressInfo).port;
});

after(() => new Promise<void>((r) => proxy.close(() => r())));

const target = { hostname: 'site.test', port: 443 };
const opts = { connectTimeoutMs: 2_000, tls: {} };

function dial(limits: { deadline: number; signal?: AbortSignal } = { deadline: performance.now() + 5_000 }) {
  return connectPlain(proxyRecord('http', port), target, 'Basic dXNlcjpwYXNz', opts, limits);
}

async function kindOf(p: Promise<net.Socket>): Promise<string> {
  try {
    (await p).destroy();
    return 'ok';
  } catch (err) {
    assert.ok(err instanceof UpstreamError, String(err));
    return err.kind;
  }
}

async function settled(): Promise<void> {
  for (let i = 0; i < 100 && open.size > 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(open.size, 0, 'the proxy still holds a connection');
}

test('sends CONNECT with the credentials; an answer split over reads, with tunnel bytes in its last read', async () => {
  let seen = '';
  script = (s, head) => {
    seen = head;
    s.write('HTTP/1.1 200 Connec');
    setTimeout(() => s.write('tion established\r\nX-A: b\r\n\r\nEARLY'), 20);
    setTimeout(() => s.end('LATE'), 40);
  };
  const socket = await dial();
  assert.match(seen, /^CONNECT site\.test:443 HTTP\/1\.1\r\nHost: site\.test:443\r\n/);
  assert.match(seen, /\r\nProxy-Authorization: Basic dXNlcjpwYXNz\r\n/);
  const reads = directReadsOf(socket);
  assert.ok(reads);
  // The splice's side: what came with the answer first, then the rest, then the end.
  const client = new (await import('node:stream')).PassThrough();
  let got = '';
  client.on('data', (b: Buffer) => {
    got += b.toString();
  });
  await new Promise((r) => setTimeout(r, 60));
  reads.relayTo(client);
  await new Promise<void>((r) => client.once('end', () => r()));
  assert.equal(got, 'EARLYLATE');
  socket.destroy();
  await settled();
});

test('refusals and faults are their kinds, and free the socket', async () => {
  const cases: Array<[Script, string]> = [
    [(s) => s.end('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n'), 'proxy_auth'],
    [(s) => s.end('HTTP/1.0 503 Service Unavailable\r\n\r\n'), 'target_unreachable'],
    [(s) => s.end('HTTP/1.1 403 Forbidden\r\n\r\n'), 'target_refused'],
    [(s) => s.end('SSH-2.0-OpenSSH\r\n\r\n'), 'proxy_protocol'],
    [(s) => s.end(), 'connect'],
    [(s) => s.resetAndDestroy(), 'connect'],
    [(s) => s.write(`HTTP/1.1 200 OK\r\n${'X: y\r\n'.repeat(4_000)}`), 'proxy_protocol'],
  ];
  for (const [answer, kind] of cases) {
    script = answer;
    assert.equal(await kindOf(dial()), kind, String(answer));
  }
  await settled();
});

test('a proxy that never answers: timeout at the connect budget or at the deadline, whichever is first', async () => {
  script = () => {};
  const t0 = performance.now();
  assert.equal(await kindOf(dial({ deadline: performance.now() + 150 })), 'timeout');
  const took = performance.now() - t0;
  assert.ok(took >= 140 && took < 1_500, `${took} ms`);
  await settled();
});

test('the caller leaving ends the dial at once as aborted; an aborted signal dials nothing', async () => {
  script = () => {};
  const ac = new AbortController();
  const p = dial({ deadline: performance.now() + 5_000, signal: ac.signal });
  setTimeout(() => ac.abort(), 30);
  assert.equal(await kindOf(p), 'aborted');
  await settled();
  let connections = 0;
  proxy.once('connection', () => connections++);
  assert.equal(await kindOf(dial({ deadline: performance.now() + 5_000, signal: ac.signal })), 'aborted');
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(connections, 0);
});

test('parseConnectStatus reads HTTP/1.0 and 1.1 status lines and nothing else', () => {
  assert.equal(parseConnectStatus(Buffer.from('HTTP/1.1 200 OK\r\n\r\n')), 200);
  assert.equal(parseConnectStatus(Buffer.from('HTTP/1.0 407\r\n\r\n')), 407);
  for (const bad of [
    'HTTP/2.0 200 OK\r\n\r\n',
    'HTTP/1.1 20x OK\r\n\r\n',
    'HTTP/1.1  200\r\n\r\n',
    'http/1.1 200 OK\r\n',
  ])
    assert.equal(parseConnectStatus(Buffer.from(bad)), null, bad);
  // The same verdicts as the status-line pattern it replaced, on any bytes.
  const pattern = /^HTTP\/1\.[01] (\d{3})(?: |\r)/;
  fc.assert(
    fc.property(
      fc.oneof(
        fc.uint8Array({ maxLength: 40 }),
        fc
          .constantFrom('HTTP/1.1 ', 'HTTP/1.0 ')
          .chain((p) =>
            fc.string({ maxLength: 10 }).map((t) => new TextEncoder().encode(`${p}${t}\r\n\r\n`)),
          ),
      ),
      (bytes) => {
        const b = Buffer.from(bytes);
        const m = pattern.exec(b.toString('latin1'));
        assert.equal(parseConnectStatus(b), m ? Number(m[1]) : null);
      },
    ),
  );
});
