import { once } from 'node:events';
import type http from 'node:http';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { AuditLog } from '../audit/audit.ts';
import { AuthFailureBudget } from '../auth/budget.ts';
import type { Config } from '../config.ts';
import type { RateCounter } from '../lib/rate-counter.ts';
import { MemoryRateCounter } from '../lib/rate-counter.ts';
import { peerKey } from '../net/connection-caps.ts';
import type { ConnectionGuard } from '../net/connection-guard.ts';
import type { Executor } from '../outbound/executor.ts';
import type { CallPrelude } from '../outbound/prelude.ts';
import type { DispatcherCache } from '../upstream/dispatchers.ts';
import { type Refusal, refusal, refusalOf } from './answers.ts';
import { ForwardGateway } from './gateway.ts';
import { type HttpDoorDeps, rawRefusal } from './http-door.ts';
import { createHttpListener } from './http-listener.ts';
import { IdleSweeper } from './idle-sweep.ts';
import { createInspectServer, type InspectDoorDeps, type InspectHook, type LeafSource } from './inspect.ts';
import { ListenerAuth } from './listener-auth.ts';
import { ForwardMetrics, type ListenerName, type ListenerTotals } from './metrics.ts';
import { createSocks5Listener } from './socks5-server.ts';

/**
 * The forward-proxy listeners as one unit: built from the services (the same engine, pool, breakers,
 * SSRF rules, rate counters and metrics as the API), started beside the API, and stopped on SIGTERM:
 * no new connection is accepted, open tunnels get up to `graceMs` to finish, then everything still open
 * is closed.
 */

export interface ListenerInfo {
  readonly name: 'http' | 'socks5';
  readonly enabled: boolean;
  readonly address: string | null;
  readonly port: number | null;
  readonly open_tunnels: number;
  readonly totals: Record<string, ListenerTotals>;
}

export interface ListenersDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly registry: Registry;
  readonly rateCounter: RateCounter;
  readonly audit: AuditLog;
  readonly executor: Executor;
  /** The one call prelude of every door (SSRF rules, timeout, host for bans). */
  readonly prelude: CallPrelude;
  readonly dispatchers: DispatcherCache;
  /** Connection caps shared with the API: a refused connection never reaches a listener. */
  readonly connections: ConnectionGuard;
  /** HTTPS inspection: leaf certificates (inspect/leaves.ts) and which hosts (inspect/settings.ts). */
  readonly inspection?: {
    readonly leaves: LeafSource & { readonly size: number };
    readonly settings: { decide(host: string, ask: 'on' | 'off' | undefined): boolean };
  };
}

/** What a connection past the caps gets on the HTTP listener (SOCKS5: closed at once). */
const TOO_MANY = rawRefusal(refusal('TOO_MANY_CONNECTIONS', 'Too many connections', { 'retry-after': '1' }));
const tooMany = () => TOO_MANY;

export class Listeners {
  readonly metrics: ForwardMetrics;
  readonly #sockets = new Set<Duplex>();
  readonly #deps: HttpDoorDeps;
  readonly #services: ListenersDeps;
  #http: http.Server | null = null;
  #socks: net.Server | null = null;

  constructor(services: ListenersDeps) {
    this.#services = services;
    const { config } = services;
    this.metrics = new ForwardMetrics(services.registry);
    const auth = new ListenerAuth({
      requireAuth: config.requireAuth,
      apiKey: config.apiKey,
      budget: new AuthFailureBudget(services.rateCounter, config.authFailureLimit),
      audit: services.audit,
      challenge: config.proxyChallenge,
    });
    const gateway = new ForwardGateway({
      executor: services.executor,
      prelude: services.prelude,
      dispatchers: services.dispatchers,
    });
    const idle = new IdleSweeper(config.tunnelIdleTimeoutS * 1000);
    const base = { gateway, auth, metrics: this.metrics, idle, sockets: this.#sockets };
    this.#deps = { ...base, inspect: this.#inspectHook(base) };
  }

  /** The hook both doors ask before a tunnel (forward/inspect.ts); none without inspection wired. */
  #inspectHook(base: HttpDoorDeps): InspectHook | undefined {
    const { inspection, prelude, logger } = this.#services;
    if (inspection === undefined) return undefined;
    const { leaves, settings } = inspection;
    this.metrics.contexts = () => leaves.size;
    const warned = new Set<string>();
    const budget = new MemoryRateCounter();
    const perMinute = this.#services.config.inspectNewHostsPerMinute;
    const door: InspectDoorDeps = {
      ...base,
      leaves,
      mayMakeLeaf: (socket) =>
        budget.take(`leaf|${peerKey(socket.remoteAddress ?? '')}`, perMinute, 60_000, 1).type === 'under',
      onClientRefused: (host, err) => {
        if (warned.has(host) || warned.size >= 1_000) return;
        warned.add(host);
        logger.warn(
          { host, reason: err.message },
          "inspection: a client refused Rota's certificate for this host: install the CA " +
            '(GET /api/v1/inspection/ca.pem) in the client, or add the host to passthrough',
        );
      },
    };
    const server = createInspectServer(door, (err) => logger.error({ err }, 'inspected request failed'));
    const forbidden = (origin: URL): Refusal | null | Promise<Refusal | null> => {
      const v = prelude.forbidden(origin);
      if (v instanceof Promise) return v.then((e) => (e === null ? null : refusalOf(e)));
      return v === null ? null : refusalOf(v);
    };
    return { decide: (host, ask) => settings.decide(host, ask), forbidden, server, door };
  }

  /** Starts the listeners whose port is not 0, on ROTA_HOST. */
  async start(): Promise<void> {
    const { config, logger } = this.#services;
    if (config.proxyPort !== 0) {
      this.#http = createHttpListener(this.#deps, (err) => logger.error({ err }, 'listener request failed'));
      this.#services.connections.guard(this.#http, { door: 'http', answer: tooMany });
      await listen(this.#http, config.host, config.proxyPort);
    }
    if (config.socksPort !== 0) {
      this.#socks = createSocks5Listener(this.#deps);
      this.#services.connections.guard(this.#socks, { door: 'socks5' });
      await listen(this.#socks, config.host, config.socksPort);
    }
  }

  info(): ListenerInfo[] {
    const t = this.metrics.totals;
    const tunnels = (...names: ListenerName[]) => names.reduce((n, l) => n + t[l].openTunnels, 0);
    return [
      describe('http', this.#http, tunnels('connect', 'inspect'), {
        http: t.http,
        connect: t.connect,
        inspect: t.inspect,
      }),
      describe('socks5', this.#socks, tunnels('socks5'), { socks5: t.socks5 }),
    ];
  }

  #closing: Promise<void> | null = null;

  /** Idempotent: main.ts and services.close() may both ask. */
  close(graceMs = 10_000): Promise<void> {
    this.#closing ??= this.#close(graceMs);
    return this.#closing;
  }

  async #close(graceMs: number): Promise<void> {
    const servers = [this.#http, this.#socks].filter((s): s is net.Server => s !== null);
    const closed = servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
    this.#http?.closeIdleConnections();
    const until = performance.now() + graceMs;
    const t = this.metrics.totals;
    const open = () => t.connect.openTunnels + t.socks5.openTunnels;
    while (open() > 0 && performance.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
    }
    for (const s of this.#sockets) s.destroy();
    this.#http?.closeAllConnections();
    await Promise.all(closed);
  }
}

async function listen(server: net.Server, host: string, port: number): Promise<void> {
  server.listen(port, host);
  await Promise.race([once(server, 'listening'), once(server, 'error').then(([err]) => Promise.reject(err))]);
}

function describe(
  name: 'http' | 'socks5',
  server: net.Server | null,
  openTunnels: number,
  totals: Record<string, ListenerTotals>,
): ListenerInfo {
  const addr = server?.address();
  const bound = addr && typeof addr === 'object' ? addr : null;
  return {
    name,
    enabled: server !== null,
    address: bound?.address ?? null,
    port: bound?.port ?? null,
    open_tunnels: openTunnels,
    totals,
  };
}
