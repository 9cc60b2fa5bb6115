import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import type net from 'node:net';
import { metric, request, waitUntil } from './flood.ts';

/**
 * A started Rota's three doors seen from chosen loopback addresses, for the flood tests: health,
 * /metrics, a request through the HTTP listener and a real upstream to a loopback target, the breakers,
 * and the check that the state after a flood is the state before it.
 */

export interface Target {
  readonly port: number;
  close(): Promise<void>;
}

export async function startTarget(): Promise<Target> {
  const server = http.createServer((_req, res) => res.end('hello'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The doors of a started Rota, and the checks every test makes of it from a given address. */
export class Doors {
  readonly api: number;
  readonly http: number;
  readonly socks: number;
  readonly target: Target;
  constructor(api: number, httpPort: number, socks: number, target: Target) {
    this.api = api;
    this.http = httpPort;
    this.socks = socks;
    this.target = target;
  }

  async health(from: string): Promise<number> {
    return (await request(this.api, '/api/v1/health', from)).status;
  }

  async metrics(from: string): Promise<string> {
    const r = await request(this.api, '/metrics', from);
    assert.equal(r.status, 200, `/metrics from ${from}`);
    return r.body;
  }

  /** A GET through the HTTP listener and tinyproxy to the target. */
  async proxied(from: string): Promise<{ status: number; body: string; error: string | undefined }> {
    const url = `http://127.0.0.1:${this.target.port}/x`;
    const r = await request(this.http, url, from, { host: `127.0.0.1:${this.target.port}` });
    return { status: r.status, body: r.body, error: r.headers['x-rota-error'] as string | undefined };
  }

  /** No breaker is open now, and none opened since start. */
  async assertNoBreakerOpened(from: string): Promise<void> {
    const now = JSON.parse((await request(this.api, '/api/v1/circuit-breakers', from)).body) as {
      data: { state: string }[];
    };
    assert.ok(now.data.length > 0 && now.data.every((b) => b.state === 'closed'), JSON.stringify(now.data));
    const events = JSON.parse((await request(this.api, '/api/v1/circuit-breakers/metrics', from)).body) as {
      data: { to_state: string }[];
    };
    assert.deepEqual(events.data, [], 'no breaker changed state');
  }

  /** Client connections held now through the listeners (the API's count includes the asking one). */
  async held(from: string): Promise<{ api: number; http: number; socks5: number }> {
    const m = await this.metrics(from);
    const of = (door: string) => metric(m, 'rota_client_connections', `door="${door}"`);
    return { api: of('api'), http: of('http'), socks5: of('socks5') };
  }

  /** API connections held before any flood (keep-alive connections of the set-up's own requests). */
  baselineApi = 0;

  /** The state after the flood is the state before it. */
  async assertAsBefore(from: string, flooder: string): Promise<void> {
    await waitUntil(
      async () => {
        const h = await this.held(from);
        return h.http === 0 && h.socks5 === 0 && h.api <= this.baselineApi;
      },
      5_000,
      'connections counted back to 0',
    );
    assert.equal(await this.health(from), 200);
    assert.equal(await this.health(flooder), 200, 'the flooder itself is served again');
    assert.deepEqual(await this.proxied(flooder), { status: 200, body: 'hello', error: undefined });
    await this.assertNoBreakerOpened(from);
  }
}
