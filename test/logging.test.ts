import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { freePort, startServer } from './helpers/server.ts';

/**
 * Log lines are written in batches (src/main.ts: 4 KiB or 200 ms). A quiet gateway must still show a
 * request line promptly, and lines still in the batch when the process stops must not be lost.
 */
describe('request log lines from the real process', () => {
  it('appear within the flush interval on a quiet gateway, and none is lost at exit', async () => {
    const server = await startServer({ ROTA_LOG_LEVEL: 'info' });
    try {
      const res = await fetch(`${server.url}/api/v1/health`, { headers: { 'x-request-id': 'quiet-1' } });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      const t0 = performance.now();
      while (!server.output().includes('"request_id":"quiet-1"') && performance.now() - t0 < 2_000) {
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.ok(server.output().includes('"request_id":"quiet-1"'), 'the request line was written');
      assert.ok(performance.now() - t0 < 1_000, `within a second: ${Math.round(performance.now() - t0)} ms`);

      // Far less than 4 KiB, sent just before the stop: only the exit flush can write them.
      for (let i = 0; i < 3; i++) {
        const r = await fetch(`${server.url}/api/v1/health`, { headers: { 'x-request-id': `last-${i}` } });
        await r.arrayBuffer();
      }
    } finally {
      const exit = await server.stop('SIGTERM');
      assert.equal(exit.code, 0);
    }
    for (let i = 0; i < 3; i++) assert.ok(server.output().includes(`"request_id":"last-${i}"`), `last-${i}`);
    assert.ok(server.output().includes('"msg":"shutting down"'));
  });
});

describe('start-up log from the real process', () => {
  it('names every door with the address and port it is bound to, one info line each', async () => {
    const [proxyPort, socksPort] = [await freePort(), await freePort()];
    const server = await startServer({
      ROTA_LOG_LEVEL: 'info',
      ROTA_PROXY_PORT: String(proxyPort),
      ROTA_SOCKS_PORT: String(socksPort),
    });
    try {
      const t0 = performance.now();
      const doors = () =>
        server
          .output()
          .split('\n')
          .filter((l) => l.includes('"listener":'))
          .map(
            (l) =>
              JSON.parse(l) as {
                level: number;
                listener: string;
                address: string;
                port: number;
                msg: string;
              },
          );
      while (doors().length < 3 && performance.now() - t0 < 2_000)
        await new Promise((r) => setTimeout(r, 20));
      const lines = doors();
      assert.deepEqual(
        lines.map((l) => [l.level, l.listener, l.address, l.port]),
        [
          [30, 'api', '127.0.0.1', server.port],
          [30, 'http', '127.0.0.1', proxyPort],
          [30, 'socks5', '127.0.0.1', socksPort],
        ],
        server.output(),
      );
      assert.equal(lines[1]?.msg, `HTTP proxy listening on 127.0.0.1:${proxyPort}`);
    } finally {
      await server.stop('SIGTERM');
    }
  });
});
