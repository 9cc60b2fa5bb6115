import type { Logger } from 'pino';
import type { CooldownTable } from '../bans/cooldowns.ts';
import type { BreakerRegistry } from '../breaker/registry.ts';
import type { ProviderSessions } from '../outbound/gateways.ts';
import type { Pool } from '../pool/pool.ts';
import type { SessionTable } from '../rotation/sessions.ts';
import type { ChangeBus } from './bus.ts';
import type { Notice } from './notices.ts';

/**
 * Keeps an instance's runtime state in step with the others': what changes here is told on the bus,
 * what the others tell is applied here (never told back).
 *
 *   local change ──▶ breakers / sessions / cool-downs / pool / settings ──▶ bus ──▶ other instances
 *   bus ──▶ apply: breaker state, session pin, cool-down, pool row (re-read from the shared store),
 *          settings (re-read from the shared store)
 *
 * Breaker states are also written to a Redis hash (`rota:breakers`) by `persistBreaker`, and provider-
 * session generations to keys of their own (generations.ts), so that an instance that starts, or comes
 * back after Redis was gone, reads the current ones (`resync`).
 */
export interface ReplicatorDeps {
  readonly bus: ChangeBus;
  readonly pool: Pool;
  readonly breakers: BreakerRegistry;
  readonly sessions: SessionTable;
  readonly providerSessions: ProviderSessions;
  readonly cooldowns: CooldownTable;
  /** Re-reads config, retry and ban policy and the inspected hosts from the shared store. */
  readonly reloadSettings: () => Promise<void>;
  readonly onStats: (notice: Extract<Notice, { type: 'stats' }>, from: string) => void;
  readonly persistBreaker: (id: string, to: 'open' | 'closed', at: number, failures: number) => void;
  /** Keeps a provider-session generation moved here for instances that start later (generations.ts). */
  readonly persistGeneration: (key: string, gen: number) => void;
  readonly logger: Logger;
}

export class Replicator {
  readonly #d: ReplicatorDeps;
  /** Settings listeners fire for remote reloads too? No: load() never tells; only updates made here do. */
  constructor(d: ReplicatorDeps) {
    this.#d = d;
  }

  start(onSettingsChange: (listener: () => void) => void): void {
    const { bus, pool, breakers, sessions, cooldowns } = this.#d;
    breakers.onTransition((e) => {
      if (breakers.applyingRemote || e.to_state === 'half-open') return;
      const to = e.to_state;
      bus.publish({ type: 'breaker', id: e.proxy_id, to, at: e.timestamp, failures: e.failure_count });
      this.#d.persistBreaker(e.proxy_id, to, e.timestamp, e.failure_count);
    });
    sessions.onPin = (sid, entry, idleMs) =>
      bus.publish({ type: 'session', sid, proxyId: entry.record.id, idleMs });
    sessions.onEnd = (id) => bus.publish({ type: 'session-ended', id });
    this.#d.providerSessions.onBump = (key, gen) => {
      bus.publish({ type: 'provider-session', key, gen });
      this.#d.persistGeneration(key, gen);
    };
    cooldowns.onClear = (host) => bus.publish({ type: 'bans-cleared', host });
    pool.listen({
      added: (e) => {
        if (!pool.applyingRemote) bus.publish({ type: 'pool', op: 'added', id: e.record.id });
      },
      removed: (e) => {
        if (!pool.applyingRemote) bus.publish({ type: 'pool', op: 'removed', id: e.record.id });
      },
      updated: (e) => {
        if (!pool.applyingRemote) bus.publish({ type: 'pool', op: 'updated', id: e.record.id });
      },
    });
    onSettingsChange(() => bus.publish({ type: 'settings' }));
    bus.subscribe((n, from) => {
      this.#apply(n, from).catch((err: unknown) =>
        this.#d.logger.warn({ err }, 'shared state: notice not applied'),
      );
    });
  }

  /** A ban made here (BanJudge's report), told to the others. */
  banned(proxyId: string, host: string, until: number, count: number): void {
    this.#d.bus.publish({ type: 'ban', proxyId, host, until, count });
  }

  async #apply(n: Notice, from: string): Promise<void> {
    const d = this.#d;
    switch (n.type) {
      case 'breaker':
        if (d.pool.get(n.id)) d.breakers.applyRemote(n.id, n.to, n.at, n.failures);
        return;
      case 'session': {
        const entry = d.pool.get(n.proxyId);
        if (entry) d.sessions.applyRemote(n.sid, entry, n.idleMs);
        return;
      }
      case 'provider-session':
        d.providerSessions.applyRemote(n.key, n.gen);
        return;
      case 'session-ended':
        d.sessions.end(n.id, true);
        return;
      case 'ban':
        d.cooldowns.applyRemote(n.proxyId, n.host, n.until, n.count);
        return;
      case 'bans-cleared':
        d.cooldowns.clear(n.host ?? undefined, true);
        return;
      case 'pool':
        if (n.op === 'added') await d.pool.applyRemoteAdd(n.id);
        else if (n.op === 'updated') await d.pool.applyRemoteUpdate(n.id);
        else d.pool.applyRemoteRemove(n.id);
        return;
      case 'settings':
        await d.reloadSettings();
        return;
      case 'stats':
        d.onStats(n, from);
        return;
    }
  }

  /**
   * After a start or a Redis outage: the pool and settings from the store, breaker states and
   * provider-session generations from Redis.
   */
  async resync(
    breakerStates: () => Promise<Map<string, { to: 'open' | 'closed'; at: number; failures: number }>>,
    generations: () => Promise<Map<string, number>>,
  ) {
    const d = this.#d;
    await d.reloadSettings();
    const stored = new Set<string>();
    for await (const page of d.pool.storeRecords()) {
      for (const r of page) {
        stored.add(r.id);
        if (!d.pool.get(r.id)) await d.pool.applyRemoteAdd(r.id);
      }
    }
    for (const e of [...d.pool.all()]) if (!stored.has(e.record.id)) d.pool.applyRemoteRemove(e.record.id);
    for (const [id, s] of await breakerStates()) {
      if (d.pool.get(id)) d.breakers.applyRemote(id, s.to, s.at, s.failures);
    }
    for (const [key, gen] of await generations()) d.providerSessions.applyRemote(key, gen);
  }
}
