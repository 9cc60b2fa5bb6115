import { freePort, type RealProxy } from './real-proxies.ts';
import { type Relay, startRelay } from './relay.ts';
import { type RunningServer, startServer } from './server.ts';

/**
 * The real Rota (`node src/main.ts`) with its forward-proxy listeners on free loopback ports, driven
 * through its API; and real upstream proxies each behind a counting relay, so that a test sees which
 * upstream a request crossed, whatever Rota says about it.
 */

export interface RotaGateway {
  /** `http://127.0.0.1:<api port>` */
  readonly api: string;
  readonly httpPort: number;
  readonly socksPort: number;
  /** `http://127.0.0.1:<http listener port>`, for `curl -x` and `proxies=`. */
  readonly httpProxy: string;
  /** `127.0.0.1:<socks listener port>`, for `curl --socks5-hostname`. */
  readonly socksAddr: string;
  addProxy(body: Readonly<Record<string, unknown>>): Promise<string>;
  deleteProxy(id: string): Promise<void>;
  output(): string;
  close(): Promise<void>;
}

/**
 * Starts Rota with both listeners (and SSRF allowing loopback targets). `apiKey` is sent as X-API-Key
 * on API calls (needed with ROTA_REQUIRE_AUTH). Retries with new ports if one was taken meanwhile.
 */
export async function startRotaGateway(
  env: Readonly<Record<string, string>> = {},
  apiKey?: string,
): Promise<RotaGateway> {
  for (let attempt = 1; ; attempt++) {
    const [httpPort, socksPort] = [await freePort(), await freePort()];
    try {
      const server = await startServer({
        ROTA_PROXY_PORT: String(httpPort),
        ROTA_SOCKS_PORT: String(socksPort),
        ROTA_SSRF_ALLOW: '127.0.0.0/8',
        ...env,
      });
      return gateway(server, httpPort, socksPort, apiKey);
    } catch (err) {
      if (attempt >= 3 || !String(err).includes('EADDRINUSE')) throw err;
    }
  }
}

function gateway(server: RunningServer, httpPort: number, socksPort: number, apiKey?: string): RotaGateway {
  const headers: Record<string, string> = apiKey ? { 'x-api-key': apiKey } : {};
  return {
    api: server.url,
    httpPort,
    socksPort,
    httpProxy: `http://127.0.0.1:${httpPort}`,
    socksAddr: `127.0.0.1:${socksPort}`,
    addProxy: async (body) => {
      const res = await fetch(`${server.url}/api/v1/proxies`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status !== 201) throw new Error(`POST /api/v1/proxies: ${res.status} ${text}`);
      return (JSON.parse(text) as { data: { id: string } }).data.id;
    },
    deleteProxy: async (id) => {
      const res = await fetch(`${server.url}/api/v1/proxies/${id}`, { method: 'DELETE', headers });
      await res.arrayBuffer();
      if (res.status !== 204) throw new Error(`DELETE /api/v1/proxies/${id}: ${res.status}`);
    },
    output: () => server.output(),
    close: async () => {
      await server.stop();
    },
  };
}

export interface Upstream {
  readonly name: string;
  readonly proxy: RealProxy;
  /** In front of the proxy: Rota is given the relay's port, so every byte Rota sends it is seen. */
  readonly relay: Relay;
  /** The body for POST /api/v1/proxies (the relay's address, the proxy's credentials as fields). */
  body(extra?: Readonly<Record<string, unknown>>): Record<string, unknown>;
  close(): Promise<void>;
}

export async function behindRelay(
  name: string,
  scheme: 'http' | 'socks5h',
  proxy: RealProxy,
): Promise<Upstream> {
  const relay = await startRelay(proxy.port);
  const credentials =
    proxy.username === null ? {} : { username: proxy.username, password: proxy.password ?? '' };
  return {
    name,
    proxy,
    relay,
    body: (extra = {}) => ({ url: `${scheme}://127.0.0.1:${relay.port}`, ...credentials, ...extra }),
    close: async () => {
      await relay.close();
      await proxy.close();
    },
  };
}
