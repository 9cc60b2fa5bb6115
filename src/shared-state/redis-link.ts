import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/**
 * The connections to Redis, and whether it is reachable. Commands fail fast while it is not (no offline
 * queue, one retry): shared state is an addition, never a reason for a request to wait or fail, so
 * every caller has a local fallback. ioredis reconnects by itself; the link logs a loss and a recovery
 * once each, and tells its listeners when it is back (to resynchronise).
 */
export class RedisLink {
  readonly cmd: Redis;
  readonly sub: Redis;
  #up = false;
  #everUp = false;
  readonly #onUp: (() => void)[] = [];

  constructor(url: string, logger: Logger) {
    const opts = {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 1_000,
      commandTimeout: 1_000,
      retryStrategy: (times: number) => Math.min(100 * times, 1_000),
    };
    // Every API request makes one rate-limit call (redis-counter.ts). Without auto-pipelining each was a
    // write(2) of its own; with it, the calls made in one turn of the event loop leave in one write (ioredis
    // flushes on setImmediate, right after the turn's I/O). Measured against redis-server, 50 in flight:
    // 9.2-11.4 → 6.1-8.8 µs of Node CPU and 6.8-7.2 → 3.3 µs of Redis CPU per call; in a --cpu-prof of
    // Rota on SQLite + Redis under POST request at 50 connections, the socket writes of the single calls
    // were ~19 µs of Rota's CPU per request.
    this.cmd = new Redis(url, { ...opts, enableAutoPipelining: true });
    // ioredis's own re-subscribe after a reconnect leaves its promise unhandled: a close while it was in
    // flight (Redis gone again, or close() during it) was an unhandledRejection. listen() re-subscribes.
    this.sub = new Redis(url, { ...opts, autoResubscribe: false });
    for (const r of [this.cmd, this.sub]) r.on('error', () => {});
    this.cmd.on('ready', () => {
      if (this.#everUp && !this.#up) logger.warn('shared state: Redis is reachable again; resynchronising');
      this.#up = true;
      this.#everUp = true;
      for (const l of this.#onUp) l();
    });
    this.cmd.on('close', () => {
      if (this.#up) logger.error('shared state: Redis unreachable; serving from local state');
      this.#up = false;
    });
  }

  get up(): boolean {
    return this.#up;
  }

  onUp(listener: () => void): void {
    this.#onUp.push(listener);
  }

  /**
   * Hands every message on `channel` to `onMessage`, subscribing now if connected and again each time the
   * subscriber connection is ready (first connect and every reconnect). A failed SUBSCRIBE is dropped: the
   * next reconnect tries again, and the replicator resynchronises what was missed.
   */
  listen(channel: string, onMessage: (text: string) => void): void {
    const join = (): void => void this.sub.subscribe(channel).catch(() => {});
    this.sub.on('message', (ch: string, text: string) => {
      if (ch === channel) onMessage(text);
    });
    this.sub.on('ready', join);
    if (this.sub.status === 'ready') join();
  }

  /** Connects both; resolves even when Redis is down (it is retried in the background). */
  async connect(): Promise<void> {
    await Promise.allSettled([this.cmd.connect(), this.sub.connect()]);
  }

  async close(): Promise<void> {
    this.cmd.disconnect();
    this.sub.disconnect();
  }
}
