import { createHash } from 'node:crypto';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type tls from 'node:tls';
import { isGateway, type ProxyRecord } from '../pool/types.ts';
import { type DialerOptions, targetTls } from './dial.ts';
import { createHttpProxyDispatcher } from './http-proxy.ts';
import type { ProxyDispatcher } from './proxy-dispatcher.ts';
import { createSocksDispatcher } from './socks.ts';
import { openTunnel, type TunnelLimits, type TunnelTarget } from './tunnel.ts';
import type { UpstreamTlsOptions } from './types.ts';

export interface DispatcherCacheOptions {
  /** ROTA_CONNECT_TIMEOUT_S in ms: bounds TCP, TLS, CONNECT or SOCKS handshake with a proxy. */
  readonly connectTimeoutMs: number;
  readonly tls?: UpstreamTlsOptions;
  /** Connections per target origin per proxy. Default 32. */
  readonly connections?: number;
  /** How long close() lets in-flight requests finish before their sockets are destroyed. Default 5 s. */
  readonly closeGraceMs?: number;
  /** SSRF rule for addresses a dialer resolves itself (see DialerOptions). */
  readonly checkAddress?: (ip: string) => string | null;
  /** ROTA_UPSTREAM_ALLOW (see DialerOptions). */
  readonly proxyAllowed?: (host: string) => boolean;
}

/** Dispatchers of rendered gateway credentials kept at most (each holds its keep-alive sockets). */
const GATEWAY_DISPATCHERS = 256;

interface Entry {
  /** The last record seen for this id: records are immutable, so the same object needs no fingerprint. */
  record: ProxyRecord;
  readonly fingerprint: string;
  readonly dispatcher: ProxyDispatcher;
}

/** Changes to any of these make the cached dispatcher wrong (a PUT may change address or credentials). */
function fingerprint(r: ProxyRecord): string {
  const parts = [r.protocol, r.host, String(r.port), r.username ?? '\u0000', r.password ?? '\u0000'];
  return createHash('sha256').update(parts.join('\u0001')).digest('base64');
}

export function createDispatcher(record: ProxyRecord, opts: DialerOptions): ProxyDispatcher {
  switch (record.protocol) {
    case 'http':
    case 'https':
      return createHttpProxyDispatcher(record, opts);
    case 'socks4':
    case 'socks4a':
    case 'socks5':
    case 'socks5h':
      return createSocksDispatcher(record, opts);
  }
}

/**
 * One long-lived dispatcher per proxy, so that its keep-alive connections (and tunnels) are reused
 * across requests. Dispatchers are created on first use and closed when their proxy is deleted.
 */
export class DispatcherCache {
  readonly #entries = new Map<string, Entry>();
  /** Rendered gateway credentials' fingerprint ──▶ its dispatcher, least recently used first. */
  readonly #gateways = new Map<string, { readonly id: string; readonly dispatcher: ProxyDispatcher }>();
  readonly #dialer: DialerOptions;
  readonly #closeGraceMs: number;
  readonly #closing = new Set<Promise<void>>();

  constructor(opts: DispatcherCacheOptions) {
    this.#dialer = {
      connectTimeoutMs: opts.connectTimeoutMs,
      tls: opts.tls ?? {},
      connections: opts.connections,
      checkAddress: opts.checkAddress,
      proxyAllowed: opts.proxyAllowed,
    };
    this.#closeGraceMs = opts.closeGraceMs ?? 5_000;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(record: ProxyRecord): ProxyDispatcher {
    if (isGateway(record)) {
      // Made a gateway by a PATCH: the dispatcher of its fixed credentials serves it no more.
      const fixed = this.#entries.get(record.id);
      if (fixed !== undefined) {
        this.#entries.delete(record.id);
        void this.#retire(fixed.dispatcher);
      }
      return this.#rendered(record);
    }
    const entry = this.#entries.get(record.id);
    // The hot path: the pool hands out the same record object until the proxy is updated.
    if (entry?.record === record) return entry.dispatcher;
    const fp = fingerprint(record);
    if (entry?.fingerprint === fp) {
      entry.record = record;
      return entry.dispatcher;
    }
    if (entry) this.#retire(entry.dispatcher);
    // New for this id (rare): a gateway made a static proxy by a PATCH leaves its provider sessions.
    else if (this.#gateways.size > 0) this.#closeRendered(record.id);
    const dispatcher = createDispatcher(record, this.#dialer);
    this.#entries.set(record.id, { record, fingerprint: fp, dispatcher });
    return dispatcher;
  }

  /**
   * A gateway's dispatcher for one set of rendered credentials (outbound/gateways.ts): a provider session
   * keeps its keep-alive connections, as its exit does. The least recently used beyond GATEWAY_DISPATCHERS
   * are closed (with the grace close() gives), so fresh sessions per request cannot pile up sockets.
   */
  #rendered(record: ProxyRecord): ProxyDispatcher {
    const key = fingerprint(record);
    const known = this.#gateways.get(key);
    if (known !== undefined && known.id === record.id) {
      this.#gateways.delete(key);
      this.#gateways.set(key, known);
      return known.dispatcher;
    }
    if (known !== undefined) void this.#retire(known.dispatcher);
    const dispatcher = createDispatcher(record, this.#dialer);
    this.#gateways.set(key, { id: record.id, dispatcher });
    if (this.#gateways.size > GATEWAY_DISPATCHERS) this.#evictIdle(key);
    return dispatcher;
  }

  /** Closes every dispatcher of gateway `id`'s rendered credentials. */
  #closeRendered(id: string): void {
    for (const [key, g] of this.#gateways) {
      if (g.id !== id) continue;
      this.#gateways.delete(key);
      void this.#retire(g.dispatcher);
    }
  }

  /**
   * Closes the least recently used gateway dispatcher with nothing in flight. One with requests running
   * is never closed to make room: a client making fresh provider sessions fast must not cut the answers
   * other calls are still streaming (the cache then holds more than its bound until they end).
   */
  #evictIdle(made: string): void {
    for (const [key, g] of this.#gateways) {
      // Not the one just made for the caller (idle until it sends): when every other is busy, none goes.
      if (key === made || g.dispatcher.busy()) continue;
      this.#gateways.delete(key);
      void this.#retire(g.dispatcher);
      return;
    }
  }

  /** A raw tunnel to `target` through the proxy of `record` (the listeners' CONNECT and SOCKS5). */
  tunnel(record: ProxyRecord, target: TunnelTarget, limits: TunnelLimits): Promise<net.Socket> {
    return openTunnel(record, target, this.#dialer, limits);
  }

  /**
   * TLS with an https target over a tunnel from tunnel(): the trust (`tls`) and the connect budget of
   * every request the engine sends (an upgrade inside an inspected connection: forward/inspect-upgrade.ts).
   */
  targetTls(tunnel: Duplex, target: TunnelTarget): Promise<tls.TLSSocket> {
    const address = { protocol: 'https:' as const, hostname: target.hostname, port: target.port };
    return targetTls(tunnel, address, this.#dialer.tls, this.#dialer.connectTimeoutMs);
  }

  /** Called when a proxy is deleted: idle sockets close now, in-flight requests get a short grace. */
  async close(id: string): Promise<void> {
    const gone: Promise<void>[] = [];
    for (const [key, g] of this.#gateways) {
      if (g.id !== id) continue;
      this.#gateways.delete(key);
      gone.push(this.#retire(g.dispatcher));
    }
    const entry = this.#entries.get(id);
    if (entry) {
      this.#entries.delete(id);
      gone.push(this.#retire(entry.dispatcher));
    }
    await Promise.all(gone);
  }

  async closeAll(): Promise<void> {
    const all = [...this.#entries.values(), ...this.#gateways.values()];
    this.#entries.clear();
    this.#gateways.clear();
    await Promise.all([...all.map((e) => this.#retire(e.dispatcher)), ...this.#closing]);
  }

  #retire(dispatcher: ProxyDispatcher): Promise<void> {
    const done = closeWithGrace(dispatcher, this.#closeGraceMs);
    this.#closing.add(done);
    void done.finally(() => this.#closing.delete(done));
    return done;
  }
}

/**
 * Lets in-flight requests finish for up to `graceMs`, then destroy() ends every socket. Not close() then
 * destroy(): undici's Agent forgets its pools on close(), so a destroy() after it reaches none of them
 * and a request still in flight would run on through a deleted proxy. The dispatcher is already out of
 * the cache, so nothing new is sent through it meanwhile.
 */
async function closeWithGrace(dispatcher: ProxyDispatcher, graceMs: number): Promise<void> {
  const until = performance.now() + graceMs;
  while (dispatcher.busy() && performance.now() < until) {
    await sleep(Math.min(50, Math.max(1, until - performance.now())));
  }
  try {
    await dispatcher.destroy();
  } catch {
    // A dispatcher already destroyed by a racing closeAll(); nothing left to release.
  }
}
