import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { Gauge } from 'prom-client';
import type { RateCounter } from '../lib/rate-counter.ts';
import type { StatsJson } from '../metrics/stats.ts';
import type { Pool } from '../pool/pool.ts';
import { ClusterStats } from './cluster-stats.ts';
import { defineGenerationCommand, persistGeneration, readGenerations } from './generations.ts';
import { RedisBus } from './redis-bus.ts';
import { RedisRateCounter } from './redis-counter.ts';
import { RedisLink } from './redis-link.ts';
import { Replicator } from './replicator.ts';
import type { SharedState, SharedStateDeps } from './shared.ts';

/** Shared state over Redis (shared.ts chooses it when ROTA_REDIS_URL is set). */

type BreakerWord = { to: 'open' | 'closed'; at: number; failures: number };

export class RedisState implements SharedState {
  readonly enabled = true;
  readonly counter: RateCounter;
  readonly #link: RedisLink;
  readonly #logger: Logger;
  readonly #id = randomUUID();
  #replicator: Replicator | null = null;
  #stats: ClusterStats | null = null;

  constructor(url: string, logger: Logger) {
    const link = new RedisLink(url, logger);
    this.#link = link;
    this.#logger = logger;
    this.counter = new RedisRateCounter(link);
  }

  async start(d: SharedStateDeps): Promise<void> {
    const link = this.#link;
    new Gauge({
      name: 'rota_shared_state_up',
      help: '1 while Redis (shared state) is reachable, 0 while this instance serves from local state',
      registers: [d.registry],
      collect() {
        this.set(link.up ? 1 : 0);
      },
    });
    defineGenerationCommand(link.cmd);
    const bus = new RedisBus(link, this.#id);
    const stats = new ClusterStats(d.pool, link, bus);
    const replicator = new Replicator({
      bus,
      pool: d.pool,
      breakers: d.breakers,
      sessions: d.sessions,
      providerSessions: d.providerSessions,
      cooldowns: d.cooldowns,
      reloadSettings: d.reloadSettings,
      onStats: (n, from) => {
        stats.peer(from, n.snapshot);
        void stats.read(n.ids).catch(() => {});
      },
      persistBreaker: (id, to, at, failures) => {
        link.cmd.hset('rota:breakers', id, JSON.stringify({ to, at, failures })).catch(() => {});
      },
      persistGeneration: (key, gen) => persistGeneration(link.cmd, key, gen),
      logger: this.#logger,
    });
    replicator.start(d.onSettingsChange);
    this.#replicator = replicator;
    this.#stats = stats;
    const resync = () =>
      void replicator
        .resync(
          () => this.#breakerWords(),
          () => readGenerations(link.cmd),
        )
        .catch(() => {});
    link.onUp(resync);
    await link.connect();
    stats.start(d.ownTotals);
  }

  async #breakerWords(): Promise<Map<string, BreakerWord>> {
    const raw = await this.#link.cmd.hgetall('rota:breakers');
    const out = new Map<string, BreakerWord>();
    for (const [id, text] of Object.entries(raw)) {
      try {
        out.set(id, JSON.parse(text) as BreakerWord);
      } catch {
        // An unreadable word is skipped; the next transition rewrites it.
      }
    }
    return out;
  }

  banned(proxyId: string, host: string, until: number, count: number): void {
    this.#replicator?.banned(proxyId, host, until, count);
  }

  statsView(own: StatsJson, pool: Pool): StatsJson {
    const peers = this.#stats?.peers() ?? [];
    let calls = own.requests_total;
    let failed = own.error_rate * own.requests_total;
    let latency = own.avg_latency_ms * own.requests_total;
    let rps = own.requests_per_second;
    for (const p of peers) {
      calls += p.calls;
      failed += p.failed;
      latency += p.latencySumMs;
      rps += p.rps;
    }
    // Every proxy the cluster has counted, not only those this instance sent traffic through.
    const byId = new Map(own.proxy_stats.map((p) => [p.proxy_id, p]));
    for (const e of pool.all()) {
      const c = e.cluster;
      if (!c) continue;
      const done = c.success + c.failed;
      byId.set(e.record.id, {
        proxy_id: e.record.id,
        requests: c.total,
        successes: c.success,
        failures: c.failed,
        // A ban adds to the total only (pool/health.ts recordBanned).
        bans: c.total - c.success - c.failed,
        avg_latency_ms: done === 0 ? 0 : c.latencySumMs / done,
      });
    }
    const proxy_stats = [...byId.values()];
    return {
      requests_total: calls,
      requests_per_second: rps,
      avg_latency_ms: calls === 0 ? 0 : latency / calls,
      error_rate: calls === 0 ? 0 : failed / calls,
      proxy_stats,
    };
  }

  async close(): Promise<void> {
    this.#stats?.stop();
    await this.#link.close();
  }
}
