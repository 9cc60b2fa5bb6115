import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { connectVia, readAll } from './helpers/forward.ts';
import { freePort, type RunningServer, startServer } from './helpers/server.ts';

/*
 * The listeners in the real process: started by `node src/main.ts` beside the API, and stopped by
 * SIGTERM: no new connection, open tunnels keep working for up to 10 s, then the process exits 0.
 */

let target: TargetServer;
/** A target that echoes and never closes on its own, so only the stop can end the tunnel. */
let echo: net.Server;
let echoPort: number;
let upstream: ForwardProxy;
let server: RunningServer;
let proxyPort: number;
let socksPort: number;

before(async () => {
  echo = net.createServer((s) => s.pipe(s));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  echoPort = (echo.address() as net.AddressInfo).port;
  [target, upstream, proxyPort, socksPort] = await Promise.all([
    startTarget(),
    startForwardProxy(),
    freePort(),
    freePort(),
  ]);
  server = await startServer({
    ROTA_PROXY_PORT: String(proxyPort),
    ROTA_SOCKS_PORT: String(socksPort),
    ROTA_SSRF_ALLOW: '127.0.0.0/8',
  });
  const res = await fetch(`${server.url}/api/v1/proxies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url: `http://127.0.0.1:${upstream.port}` }),
  });
  assert.equal(res.status, 201);
});

after(async () => {
  await server.stop('SIGKILL');
  echo.close();
  await Promise.all([target.close(), upstream.close()]);
});

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });
}

test('SIGTERM: listeners stop accepting, an open tunnel gets up to 10 s, then the process exits 0', async () => {
  const where = `127.0.0.1:${echoPort}`;
  const held = await connectVia(proxyPort, where);
  assert.equal(held.status, 200);
  const stopping = server.stop('SIGTERM');
  const t0 = Date.now();
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(await refused(proxyPort), true, 'the HTTP listener no longer accepts');
  assert.equal(await refused(socksPort), true, 'the SOCKS5 listener no longer accepts');
  // The open tunnel still carries bytes both ways.
  held.socket.write('still here');
  const answer = await readAll(held.socket, (s) => s.includes('still here'));
  assert.equal(answer, 'still here');
  const exit = await stopping;
  const took = Date.now() - t0;
  assert.equal(exit.code, 0, server.output());
  assert.ok(took >= 9_000 && took < 14_000, `exited after ${took} ms`);
  await readAll(held.socket);
  assert.ok(
    held.socket.destroyed || held.socket.readableEnded,
    'the tunnel was closed at the end of the grace',
  );
});
