import type { BreakerRegistry } from '../breaker/registry.ts';
import { isGateway, render } from '../outbound/gateways.ts';
import type { Selector } from '../outbound/selector.ts';
import { recordAttempt } from '../pool/health.ts';
import type { Pool, ProxyEntry } from '../pool/pool.ts';
import type { ProxyRecord } from '../pool/types.ts';
import type { DispatcherCache } from '../upstream/dispatchers.ts';
import { send } from '../upstream/send.ts';
import { UpstreamError } from '../upstream/types.ts';

export interface HealthResult {
  proxy_id: string;
  status: 'working' | 'failed';
  latency_ms: number;
  error: string | null;
  tested_at: string;
}

/**
 * What fails a proxy in a health check: a proxy fault, or the proxy refusing the health-check URL. The
 * URL is the operator's, not a client's: a proxy that refuses it is not usable (bans/refusals.ts asks for
 * this check when a proxy refuses many clients' targets). A health-check URL that is itself down
 * (`target_unreachable`) is not the proxy's doing.
 */
function checkFault(error: UpstreamError): boolean {
  return error.proxyFault || error.kind === 'target_refused';
}

export interface HealthCheckerDeps {
  pool: Pool;
  breakers: BreakerRegistry;
  selector: Selector;
  dispatchers: DispatcherCache;
  url: string;
  concurrency: number;
  timeoutMs: number;
  monotonic: () => number;
  now: () => number;
  /** With ROTA_EXIT_IP_URL: learns the exit of each proxy that passed (exit/learner.ts). */
  exits?: { learn(e: ProxyEntry): Promise<void> } | null;
}

/**
 * Sends one GET of ROTA_HEALTH_CHECK_URL through each proxy, at most `concurrency` at a time across
 * every check in progress, and writes the outcome back to health, breaker and stats exactly as a real
 * attempt would.
 *
 *   check(ids) ──▶ N workers ──▶ proxy ──▶ health-check URL
 *                      └──▶ health / breaker / stats
 */
export class HealthChecker {
  private readonly d: HealthCheckerDeps;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<HealthResult[]> | null = null;
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(deps: HealthCheckerDeps) {
    this.d = deps;
  }

  /** Checks the given proxies (unknown ids are skipped) or, without ids, the whole pool. */
  async check(ids?: readonly string[]): Promise<HealthResult[]> {
    const entries = ids
      ? [...new Set(ids)].map((id) => this.d.pool.get(id)).filter((e): e is ProxyEntry => e !== undefined)
      : [...this.d.pool.all()];
    const results = new Array<HealthResult>(entries.length);
    let next = 0;
    const worker = async () => {
      while (next < entries.length) {
        const i = next++;
        await this.acquire();
        try {
          results[i] = await this.checkOne(entries[i]!);
        } finally {
          this.release();
        }
      }
    };
    const n = Math.min(this.d.concurrency, entries.length);
    await Promise.all(Array.from({ length: n }, worker));
    return results;
  }

  /** Overlapping checks (API calls, the timer) share one bound: the proxies see at most `concurrency`. */
  private acquire(): Promise<void> {
    if (this.active < this.d.concurrency) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Hands the slot straight to the next waiter, so that a late arrival cannot overtake it. */
  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active--;
  }

  private async checkOne(e: ProxyEntry): Promise<HealthResult> {
    // Deleted while it waited for a slot: asking for its dispatcher would open one nobody closes.
    if (this.d.pool.get(e.record.id) !== e) return this.removed(e);
    const t0 = this.d.monotonic();
    const permit = this.d.breakers.admit(e.record.id);
    const error = await this.attempt(e.record, t0);
    const latency = this.d.monotonic() - t0;
    const fault = error !== null && checkFault(error);
    // Cut short (the proxy was deleted meanwhile), or Rota's own failure: nothing about the proxy.
    const cut = error?.kind === 'aborted' || error?.kind === 'local';
    permit?.release(cut ? 'neutral' : fault ? 'failure' : 'success');
    if (!cut) {
      recordAttempt(e, !fault, fault, latency);
      this.d.selector.record(e, { ok: !fault, latencyMs: latency, proxyFault: fault });
    }
    if (!fault && !cut) await this.d.exits?.learn(e);
    return {
      proxy_id: e.record.id,
      status: fault || cut ? 'failed' : 'working',
      latency_ms: Math.round(latency * 100) / 100,
      error: error ? `${error.kind}: ${error.message}` : null,
      tested_at: new Date(this.d.now()).toISOString(),
    };
  }

  /** One GET of the health-check URL through the proxy: null when it worked, else why not. */
  private async attempt(record: ProxyRecord, t0: number): Promise<UpstreamError | null> {
    // A gateway is checked through a fresh provider session of its own country (outbound/gateways.ts).
    const dial = isGateway(record) ? render(null, record, undefined, record.country).record : record;
    try {
      await send(this.d.dispatchers.get(dial), {
        url: new URL(this.d.url),
        method: 'GET',
        headers: { 'user-agent': 'rota-health-check' },
        body: null,
        deadline: t0 + this.d.timeoutMs,
        maxResponseBytes: 64 * 1024,
      });
      return null;
    } catch (err) {
      return err instanceof UpstreamError
        ? err
        : new UpstreamError('local', 'health check failed internally', { mayHaveReachedTarget: true });
    }
  }

  /**
   * The same check of a proxy that is not in the pool (a proxy source's candidate), within the same
   * concurrency bound. Nothing is recorded (no member, no breaker); its connections are closed after.
   * `ok` is what `working` means for a member: no proxy fault, and not cut short.
   */
  async probe(record: ProxyRecord): Promise<{ ok: boolean; error: string | null }> {
    await this.acquire();
    try {
      const error = await this.attempt(record, this.d.monotonic());
      const ok = error === null || (!checkFault(error) && error.kind !== 'aborted' && error.kind !== 'local');
      return { ok, error: error ? `${error.kind}: ${error.message}` : null };
    } finally {
      this.release();
      await this.d.dispatchers.close(record.id);
    }
  }

  private removed(e: ProxyEntry): HealthResult {
    return {
      proxy_id: e.record.id,
      status: 'failed',
      latency_ms: 0,
      error: 'aborted: the proxy was removed before it could be checked',
      tested_at: new Date(this.d.now()).toISOString(),
    };
  }

  /** Periodic checks of the whole pool; a round never overlaps the previous one. */
  start(intervalS: number): void {
    if (intervalS <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.check().finally(() => {
        this.running = null;
      });
    }, intervalS * 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
