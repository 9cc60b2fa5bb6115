import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { closeAll, type Idle, metric, openIdle, rawAsk, waitUntil } from './helpers/flood.ts';
import { Doors, startTarget, type Target } from './helpers/flood-doors.ts';
import { type RotaGateway, startRotaGateway } from './helpers/forward-rota.ts';
import { type RealProxy, startAllOrClose, startTinyproxy } from './helpers/real-proxies.ts';

/*
 * An idle-connection flood against the real Rota (a child process): past ROTA_MAX_CONNECTIONS_PER_IP and
 * ROTA_MAX_CONNECTIONS new connections are refused (503 TOO_MANY_CONNECTIONS on the HTTP ports, closed
 * on SOCKS5), other addresses are served through a real upstream (tinyproxy), no breaker opens, and once
 * the flood is gone everything is as before. security-flood-fd.test.ts does the same under a real
 * open-file limit.
 */

const PER_IP = 20;
const TOTAL = 80;

const apiHead = 'GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
const listenerHead = (port: number) =>
  `GET http://127.0.0.1:${port}/x HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`;

describe('a connection flood from loopback addresses', () => {
  let tiny: RealProxy;
  let target: Target;
  let rota: RotaGateway;
  let doors: Doors;
  const flood: Idle[] = [];
  before(async () => {
    [tiny, target] = await startAllOrClose<[RealProxy, Target]>([startTinyproxy(), startTarget()]);
    rota = await startRotaGateway({
      ROTA_MAX_CONNECTIONS_PER_IP: String(PER_IP),
      ROTA_MAX_CONNECTIONS: String(TOTAL),
      ROTA_HEDGE_DELAY_S: '0',
    });
    await rota.addProxy({ url: `http://127.0.0.1:${tiny.port}` });
    doors = new Doors(Number(new URL(rota.api).port), rota.httpPort, rota.socksPort, target);
    assert.deepEqual(await doors.proxied('127.0.0.2'), { status: 200, body: 'hello', error: undefined });
    doors.baselineApi = (await doors.held('127.0.0.2')).api;
  });
  after(async () => {
    closeAll(flood);
    await rota?.close();
    await tiny?.close();
    await target?.close();
  });

  it('caps one address across the API and both listeners; other addresses are served', async () => {
    const [flooder, other] = ['127.0.0.11', '127.0.0.12'];
    // One door after the other, each once Rota has taken it in: Rota accepts connections waiting on
    // different ports in no set order.
    flood.push(...(await openIdle(doors.api, flooder, PER_IP / 2)));
    await waitUntil(async () => (await doors.held(other)).api > PER_IP / 2, 10_000, 'API connections taken');
    flood.push(...(await openIdle(doors.http, flooder, PER_IP / 2)));
    await waitUntil(async () => (await doors.held(other)).http === PER_IP / 2, 10_000, 'listener ones taken');
    const t0 = performance.now();
    const refused = await openIdle(doors.socks, flooder, 10);
    flood.push(...refused);
    // At once: well before the 10 s SOCKS5 handshake timeout (src/forward/socks5-server.ts) would close them.
    await waitUntil(() => refused.every((i) => i.closed), 4_000, 'SOCKS5 connections past the cap closed');
    assert.ok(performance.now() - t0 < 4_000, 'closed at once');
    assert.ok(
      refused.every((i) => i.received === ''),
      'closed without a byte',
    );
    const h = await doors.held('127.0.0.12');
    assert.deepEqual([h.http, h.socks5], [PER_IP / 2, 0]);
    assert.ok(h.api >= PER_IP / 2 + 1, `api ${h.api}`);

    const api = await rawAsk(doors.api, flooder, apiHead);
    assert.match(api, /^HTTP\/1\.1 503 /);
    assert.match(api, /"code":"TOO_MANY_CONNECTIONS"/);
    assert.match(api, /x-request-id: \S+/i);
    const listener = await rawAsk(doors.http, flooder, listenerHead(target.port));
    assert.match(listener, /^HTTP\/1\.1 503 /);
    assert.match(listener, /X-Rota-Error: TOO_MANY_CONNECTIONS\r\n/i);
    assert.equal(await rawAsk(doors.socks, flooder, Buffer.from([5, 1, 0])), '');

    // Another address: the API, /metrics and a listener request through the real upstream.
    assert.equal(await doors.health('127.0.0.12'), 200);
    assert.deepEqual(await doors.proxied('127.0.0.12'), { status: 200, body: 'hello', error: undefined });
    const m = await doors.metrics('127.0.0.12');
    assert.ok(metric(m, 'rota_client_connections_refused_total', 'door="socks5",reason="per_ip"') >= 11);
    assert.ok(
      flood.slice(0, PER_IP).every((i) => !i.closed),
      'the admitted connections stay open',
    );

    closeAll(flood.splice(0));
    await doors.assertAsBefore('127.0.0.12', flooder);
  });

  it('caps all addresses together, and the API keeps a reserve for /health and /metrics', async () => {
    // One address more than the total needs: every connection counts, the set-up's idle keep-alive ones too.
    for (let i = 0; i <= TOTAL / PER_IP; i++) {
      flood.push(...(await openIdle(doors.http, `127.0.0.${21 + i}`, PER_IP)));
    }
    await waitUntil(
      async () => {
        const h = await doors.held('127.0.0.30');
        return h.http + h.api - 1 === TOTAL; // less the connection asking
      },
      10_000,
      'the total reached',
    );
    const late = await rawAsk(doors.http, '127.0.0.30', listenerHead(target.port));
    assert.match(late, /^HTTP\/1\.1 503 [\s\S]*X-Rota-Error: TOO_MANY_CONNECTIONS/i);
    const socks = await openIdle(doors.socks, '127.0.0.30', 1);
    await waitUntil(() => socks[0]!.closed, 4_000, 'a SOCKS5 connection past the total closed');
    assert.equal(await doors.health('127.0.0.30'), 200, 'the API past the total, within its reserve');
    const m = await doors.metrics('127.0.0.31');
    assert.ok(metric(m, 'rota_client_connections_refused_total', 'door="http",reason="total"') >= 1);

    closeAll(flood.splice(0));
    await doors.assertAsBefore('127.0.0.30', '127.0.0.21');
  });
});
