import { cooldownView, reportBan } from '../bans/report.ts';
import { configView, poolStatus } from '../control/status.ts';
import { RotaError } from '../errors/rota-error.ts';
import type { CallerSignal } from '../lib/abort.ts';
import { bufferedCall, parseTarget } from '../outbound/buffered-call.ts';
import { rotatePick } from '../outbound/rotate.ts';
import type { AddProxyInput } from '../pool/pool.ts';
import type { StatusFilter } from '../pool/types.ts';
import { proxyView } from '../pool/view.ts';
import type { Services } from '../services.ts';
import type {
  BanReport,
  BansListQuery,
  FetchAnswer,
  FetchCall,
  Json,
  ListProxiesQuery,
  RotaBackend,
  RotateQuery,
} from './backend.ts';

/** Route limits a tool call counts against, as the matching REST route does (http/rate-limit.ts). */
export type ToolLimit = 'request' | 'addProxy' | 'healthCheck' | 'config';

/** Who is calling, as the HTTP door saw them: their limits, their audit lines, their going away. */
export interface LocalCaller {
  /** Counts the call in the same bucket as the REST route; rejects with RATE_LIMIT_EXCEEDED past it. */
  charge(limit: ToolLimit): Promise<void>;
  /** One audit line for a write, as the REST route's (http/hooks.ts). */
  audit(action: string, status: number, input: { body?: unknown; params?: unknown }): void;
  /** Aborted when the client goes away: a fetch in flight stops. */
  readonly signal?: CallerSignal;
}

function page<T>(all: readonly T[], p: number, size: number) {
  const start = (p - 1) * size;
  return { items: all.slice(start, start + size), total: all.length, page: p, page_size: size };
}

/**
 * The backend of /mcp: the services of this process, called as the REST routes call them, so a tool
 * does what its route does (the fetch tool is POST request: the one call prelude, then the engine).
 */
export class LocalBackend implements RotaBackend {
  readonly #s: Services;
  readonly #caller: LocalCaller;

  constructor(services: Services, caller: LocalCaller) {
    this.#s = services;
    this.#caller = caller;
  }

  async fetch(c: FetchCall): Promise<FetchAnswer> {
    await this.#caller.charge('request');
    const { prelude, executor, dispatchers, config } = this.#s;
    const deps = { prelude, executor, dispatchers, maxResponseBytes: config.maxResponseBytes };
    const a = await bufferedCall(deps, {
      url: parseTarget(c.url, ['arguments', 'url']),
      method: c.method,
      headers: c.headers,
      body: c.body === null || c.body === undefined ? null : Buffer.from(c.body, 'utf8'),
      timeoutS: c.timeout,
      sessionId: c.session_id,
      country: c.country?.toUpperCase(),
      signal: this.#caller.signal,
    });
    return { ...a.fields, body: a.body };
  }

  /** GET status's data (http/routes/monitoring.ts). */
  async poolStatus(): Promise<Json> {
    const { pool, settings, store, selector } = this.#s;
    return poolStatus({ pool, settings, backend: store.backend, lastRotation: selector.lastRotation });
  }

  async listProxies(q: ListProxiesQuery): Promise<Json> {
    const { pool } = this.#s;
    const { items, total } = pool.page(q.page, q.page_size, q.status_filter as StatusFilter | undefined);
    return {
      items: items.map((e) => proxyView(pool, e)),
      total,
      page: q.page,
      page_size: q.page_size,
      has_next: q.page * q.page_size < total,
      has_prev: q.page > 1,
    };
  }

  /** GET rotate's answer (outbound/rotate.ts): the same rule, session key and pick. */
  async rotate(q: RotateQuery): Promise<Json> {
    const { selector, breakers, clock, pool, prelude } = this.#s;
    const { entry, policy } = rotatePick({ prelude, selector, breakers, now: clock.now }, q);
    return { ...proxyView(pool, entry), policy };
  }

  async checkProxies(ids: readonly string[] | undefined): Promise<Json> {
    await this.#caller.charge('healthCheck');
    const results = await this.#s.health.check(ids);
    this.#caller.audit('proxy.health_check', 200, { body: ids === undefined ? {} : { proxy_ids: ids } });
    return results;
  }

  async listBans(q: BansListQuery): Promise<Json> {
    const all = this.#s.cooldowns.active(q.host?.toLowerCase());
    const p = page(all, q.page, q.page_size);
    const items = p.items.map(cooldownView);
    return { ...p, items, has_next: q.page * q.page_size < all.length };
  }

  async reportBan(b: BanReport): Promise<Json> {
    await this.#caller.charge('config');
    return this.#audited('bans.report', 201, { body: b }, async () =>
      reportBan(
        { bans: this.#s.bans, known: (id) => this.#s.pool.get(id) !== undefined, exitOf: this.#s.exitOf },
        b,
      ),
    );
  }

  async addProxy(body: Record<string, unknown>): Promise<Json> {
    await this.#caller.charge('addProxy');
    const { pool } = this.#s;
    return this.#audited('proxy.add', 201, { body }, async () =>
      proxyView(pool, await pool.add(body as unknown as AddProxyInput)),
    );
  }

  async removeProxy(id: string): Promise<void> {
    await this.#audited('proxy.delete', 204, { params: { proxy_id: id } }, async () => {
      if (await this.#s.pool.remove(id)) return;
      throw new RotaError('PROXY_NOT_FOUND', 'Proxy not found', { details: { proxy_id: id.slice(0, 64) } });
    });
  }

  /** GET config's data (http/routes/config.ts). */
  async config(): Promise<Json> {
    const { settings, retry, config } = this.#s;
    return configView({ settings, retry, requireAuth: config.requireAuth });
  }

  async #audited<T>(
    action: string,
    status: number,
    input: { body?: unknown; params?: unknown },
    run: () => Promise<T>,
  ): Promise<T> {
    try {
      const out = await run();
      this.#caller.audit(action, status, input);
      return out;
    } catch (err) {
      this.#caller.audit(action, err instanceof RotaError ? err.status : 500, input);
      throw err;
    }
  }
}
