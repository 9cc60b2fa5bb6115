import type { Pool, ProxyEntry, ProxyStats } from '../pool/pool.ts';
import type { ChangeBus } from './bus.ts';
import type { InstanceStats } from './notices.ts';
import type { RedisLink } from './redis-link.ts';

/**
 * Per-proxy counters across the cluster (records and `GET stats` within 2 s; `/metrics` stays per
 * instance). Every second each instance adds what its proxies did since the last flush to one Redis hash
 * per proxy (HINCRBY, one pipeline), then says which proxies moved; every instance reads those hashes
 * back into `entry.cluster`. The call totals travel in the notice itself: each instance keeps the latest
 * snapshot of every other and sums them.
 */
export class ClusterStats {
  readonly #pool: Pool;
  readonly #link: RedisLink;
  readonly #bus: ChangeBus;
  readonly #sent = new WeakMap<ProxyEntry, ProxyStats>();
  readonly #peers = new Map<string, { at: number; s: InstanceStats }>();
  #timer: NodeJS.Timeout | null = null;

  constructor(pool: Pool, link: RedisLink, bus: ChangeBus) {
    this.#pool = pool;
    this.#link = link;
    this.#bus = bus;
  }

  start(own: () => InstanceStats, everyMs = 1_000): void {
    this.#timer = setInterval(() => void this.flush(own()).catch(() => {}), everyMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
  }

  /** Sends this instance's deltas and snapshot. */
  async flush(snapshot: InstanceStats): Promise<void> {
    if (!this.#link.up) return;
    const pipe = this.#link.cmd.pipeline();
    const ids: string[] = [];
    for (const e of this.#pool.all()) {
      const before = this.#sent.get(e) ?? { total: 0, success: 0, failed: 0, latencySumMs: 0 };
      const s = e.stats;
      if (s.total === before.total) continue;
      const key = `rota:stats:${e.record.id}`;
      pipe.hincrby(key, 'total', s.total - before.total);
      pipe.hincrby(key, 'success', s.success - before.success);
      pipe.hincrby(key, 'failed', s.failed - before.failed);
      pipe.hincrbyfloat(key, 'latency', s.latencySumMs - before.latencySumMs);
      this.#sent.set(e, { ...s });
      ids.push(e.record.id);
    }
    if (ids.length > 0) await pipe.exec();
    this.#bus.publish({ type: 'stats', snapshot, ids });
    if (ids.length > 0) await this.read(ids);
  }

  /** Reads the shared counters of `ids` into their entries. */
  async read(ids: readonly string[]): Promise<void> {
    if (!this.#link.up || ids.length === 0) return;
    const pipe = this.#link.cmd.pipeline();
    for (const id of ids) pipe.hmget(`rota:stats:${id}`, 'total', 'success', 'failed', 'latency');
    const rows = (await pipe.exec()) ?? [];
    ids.forEach((id, i) => {
      const e = this.#pool.get(id);
      const v = rows[i]?.[1] as (string | null)[] | undefined;
      if (!e || !v) return;
      e.cluster = {
        total: Number(v[0] ?? 0),
        success: Number(v[1] ?? 0),
        failed: Number(v[2] ?? 0),
        latencySumMs: Number(v[3] ?? 0),
      };
    });
  }

  peer(from: string, s: InstanceStats): void {
    this.#peers.set(from, { at: Date.now(), s });
  }

  /** The other live instances' latest figures (older than 5 s: gone). */
  peers(): InstanceStats[] {
    const out: InstanceStats[] = [];
    for (const [id, p] of this.#peers) {
      if (Date.now() - p.at > 5_000) this.#peers.delete(id);
      else out.push(p.s);
    }
    return out;
  }
}
