import http from 'node:http';
import type net from 'node:net';

/**
 * A site that bans some exit addresses, in the harness process, like test/fixtures/ban-target.ts but
 * lean enough for load (counters instead of a log of every request):
 *
 *   host A  127.0.0.2  403 for requests arriving from an address in `banned`, else the small JSON
 *   host B  127.0.0.1  never bans
 *   host C  127.0.0.3  bans everyone (to build cool-downs quickly)
 *
 * `GET /whoami` on any host answers the address the request came from (to check the proxies' egress).
 */
export type SiteHost = 'A' | 'B' | 'C';

export interface BanSite {
  url(host: SiteHost, path: string): string;
  /** Hosts as Rota keys cool-downs (no port). */
  readonly hostName: Readonly<Record<SiteHost, string>>;
  banned: ReadonlySet<string>;
  /** Answers so far, by `${host} ${egress}` and whether they were bans. */
  counts(): ReadonlyMap<string, { served: number; banned: number }>;
  resetCounts(): void;
  close(): Promise<void>;
}

const SMALL = Buffer.from(JSON.stringify({ ok: true, service: 'rota-bench-target', n: 42 }));
const DENIED = Buffer.from('<h1>Access denied</h1>');
const ADDRESS: Readonly<Record<SiteHost, string>> = { A: '127.0.0.2', B: '127.0.0.1', C: '127.0.0.3' };

export async function startBanSite(banned: readonly string[]): Promise<BanSite> {
  let bannedSet: ReadonlySet<string> = new Set(banned);
  let counts = new Map<string, { served: number; banned: number }>();
  const servers: http.Server[] = [];
  const sockets = new Set<net.Socket>();
  const ports = {} as Record<SiteHost, number>;
  const handler = (host: SiteHost) => (req: http.IncomingMessage, res: http.ServerResponse) => {
    req.resume();
    const from = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    if (req.url === '/whoami') return void res.end(from);
    const ban = host === 'C' || (host === 'A' && bannedSet.has(from));
    const key = `${host} ${from}`;
    const c = counts.get(key) ?? { served: 0, banned: 0 };
    counts.set(key, c);
    if (ban) c.banned++;
    else c.served++;
    const body = ban ? DENIED : SMALL;
    res.writeHead(ban ? 403 : 200, {
      'content-type': ban ? 'text/html' : 'application/json',
      'content-length': body.length,
    });
    res.end(body);
  };
  for (const host of ['A', 'B', 'C'] as const) {
    const server = http.createServer(handler(host));
    server.keepAliveTimeout = 65_000;
    server.headersTimeout = 66_000;
    server.on('connection', (s) => {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, ADDRESS[host], resolve);
    });
    ports[host] = (server.address() as net.AddressInfo).port;
    servers.push(server);
  }
  return {
    url: (host, path) => `http://${ADDRESS[host]}:${ports[host]}${path}`,
    hostName: ADDRESS,
    get banned() {
      return bannedSet;
    },
    set banned(v: ReadonlySet<string>) {
      bannedSet = v;
    },
    counts: () => counts,
    resetCounts: () => {
      counts = new Map();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}
