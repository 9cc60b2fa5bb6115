import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import { ConnectionCaps } from './connection-caps.ts';
import { ConnectionGuard, type GuardEvent, MAX_ANSWERING } from './connection-guard.ts';

const ANSWER = 'HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n';

async function listening(server: net.Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as net.AddressInfo).port;
}

/** A connection from `localAddress`, open once connected. */
async function open(port: number, localAddress = '127.0.0.1'): Promise<net.Socket> {
  const s = net.connect({ port, host: '127.0.0.1', localAddress });
  s.on('error', () => {});
  await once(s, 'connect');
  return s;
}

/** Sends a GET and reads until the server closes. */
async function ask(port: number, localAddress = '127.0.0.1'): Promise<string> {
  const s = await open(port, localAddress);
  s.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  let text = '';
  s.on('data', (c: Buffer) => (text += c.toString('latin1')));
  await once(s, 'close');
  return text;
}

async function until(check: () => boolean, ms = 2_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('connection guard', () => {
  const servers: net.Server[] = [];
  const sockets: net.Socket[] = [];
  after(() => {
    for (const s of sockets) s.destroy();
    for (const s of servers) s.close();
  });

  it('answers an HTTP connection past the cap and hands the others to the server', async () => {
    const events: GuardEvent[] = [];
    const guard = new ConnectionGuard(new ConnectionCaps({ maxPerIp: 2, maxTotal: 100 }), (e) =>
      events.push(e),
    );
    let seenThis: unknown = null;
    const server = http.createServer((_req, res) => res.end('ok'));
    server.on('connection', function (this: unknown) {
      seenThis = this;
    });
    servers.push(server);
    guard.guard(server, { door: 'api', answer: () => ANSWER });
    const port = await listening(server);
    sockets.push(await open(port), await open(port));
    await until(() => guard.caps.total === 2);
    assert.equal(seenThis, server, 'the server’s own listeners run with the server as this');
    const refused = await ask(port);
    assert.match(refused, /^HTTP\/1\.1 503 /);
    assert.match(await ask(port, '127.0.0.2'), /^HTTP\/1\.1 200 [\s\S]*ok$/, 'another address passes');
    assert.equal(events.length, 1, 'one notice for the refusal');
    assert.deepEqual(events[0], {
      type: 'refused',
      door: 'api',
      reason: 'per_ip',
      address: '127.0.0.1',
      suppressed: 0,
    });
    for (const s of sockets.splice(0)) s.destroy();
    await until(() => guard.caps.total === 0);
    assert.match(await ask(port), /^HTTP\/1\.1 200 /, 'room again once the idle connections closed');
    await until(() => guard.caps.total === 0 && guard.answering === 0);
    assert.equal(guard.caps.addresses, 0);
  });

  it('closes a refused connection that sends nothing within the wait, and one without an answer at once', async () => {
    const guard = new ConnectionGuard(new ConnectionCaps({ maxPerIp: 1, maxTotal: 100 }));
    let reached = 0;
    const plain = net.createServer(() => reached++);
    const web = http.createServer((_req, res) => res.end());
    servers.push(plain, web);
    guard.guard(plain, { door: 'socks5' });
    guard.guard(web, { door: 'http', answer: () => ANSWER });
    const [plainPort, webPort] = [await listening(plain), await listening(web)];
    sockets.push(await open(webPort));
    await until(() => guard.caps.total === 1);
    const t0 = performance.now();
    const closedAtOnce = await open(plainPort);
    await once(closedAtOnce, 'close');
    assert.ok(performance.now() - t0 < 300, 'the count of one address covers every door');
    assert.equal(reached, 0, 'a refused connection never reaches the server');
    const silent = await open(webPort);
    const t1 = performance.now();
    await once(silent, 'close');
    const waited = performance.now() - t1;
    assert.ok(waited > 300 && waited < 2_000, `closed after ${Math.round(waited)} ms`);
  });

  it('closes at once past MAX_ANSWERING refused connections waiting for their head', async () => {
    const guard = new ConnectionGuard(new ConnectionCaps({ maxPerIp: 1, maxTotal: 1, apiReserve: 0 }));
    const server = http.createServer((_req, res) => res.end());
    servers.push(server);
    guard.guard(server, { door: 'api', answer: () => ANSWER });
    const port = await listening(server);
    sockets.push(await open(port));
    const waiting: net.Socket[] = [];
    for (let i = 0; i < MAX_ANSWERING; i++) waiting.push(await open(port, '127.0.0.3'));
    sockets.push(...waiting);
    await until(() => guard.answering === MAX_ANSWERING);
    const extra = await open(port, '127.0.0.4');
    await once(extra, 'close');
    assert.equal(guard.answering, MAX_ANSWERING);
    for (const s of waiting) s.destroy();
    await until(() => guard.answering === 0);
  });

  it('takes accept errors (EMFILE) as a notice, not a crash, at most one line per 10 s', () => {
    const events: GuardEvent[] = [];
    const guard = new ConnectionGuard(new ConnectionCaps({ maxPerIp: 1, maxTotal: 1 }), (e) =>
      events.push(e),
    );
    const server = net.createServer();
    guard.guard(server, { door: 'socks5' });
    const emfile = () => Object.assign(new Error('accept EMFILE'), { code: 'EMFILE', syscall: 'accept' });
    server.emit('error', emfile());
    server.emit('error', emfile());
    assert.deepEqual(events, [{ type: 'accept_error', code: 'EMFILE', suppressed: 0 }]);
  });
});
