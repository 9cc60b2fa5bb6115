/**
 * Runs the proxy sources: each is fetched at start and every `refresh_s` (unref'd timers, stopped on
 * shutdown), parsed, its new proxies optionally health-checked, and the survivors added to the pool in
 * one transaction, tagged `source:NAME`. A failed fetch is reported in its status and changes nothing:
 * sources only ever add proxies.
 *
 *   timer ──▶ fetch (SSRF, deadline, byte cap) ──▶ parse ──▶ new only ──▶ probe? ──▶ Pool.addMany
 */
import type { Logger } from 'pino';
import type { Agent } from 'undici';
import type { Config } from '../config.ts';
import { RotaError } from '../errors/rota-error.ts';
import type { HealthChecker } from '../health/checker.ts';
import type { Pool } from '../pool/pool.ts';
import { identityKey, type ProxyRecord } from '../pool/types.ts';
import type { SsrfGuard } from '../ssrf/guard.ts';
import type { ProxyStore } from '../store/types.ts';
import { importList } from './bulk.ts';
import { loadSources, type SourceConfig, saveSources, shownSource } from './config.ts';
import { fetchList, sourceAgent } from './fetch.ts';
import { parseCsvList, parseJsonList } from './formats.ts';
import { type Candidate, countLines, MAX_IMPORT_LINES, type ParsedList, parseTextList } from './lines.ts';

export interface SourceStatus {
  last_fetch_at: string | null;
  /** Proxies the last answer listed (valid entries). */
  last_count: number | null;
  /** Proxies the last fetch added to the pool. */
  last_added: number | null;
  /** Entries of the last answer that are not proxies. */
  last_invalid: number | null;
  /** New proxies the last fetch left out because they failed the health check. */
  last_rejected: number | null;
  last_error: string | null;
}

export type SourceView = SourceConfig & SourceStatus;

export interface SourceManagerDeps {
  store: ProxyStore;
  pool: Pool;
  health: HealthChecker;
  ssrf: SsrfGuard;
  logger: Logger;
  now: () => number;
  /** Byte cap of an answer (ROTA_MAX_IMPORT_BYTES). */
  maxBytes: number;
  /** Deadline of one fetch, connect to last byte. */
  timeoutMs: number;
  connectTimeoutMs: number;
}

interface Running {
  readonly config: SourceConfig;
  status: SourceStatus;
  timer: NodeJS.Timeout | null;
  controller: AbortController;
  run: Promise<void> | null;
}

/** Probes of one source in flight at most. */
const PROBES_AT_ONCE = 32;
/** How long a replaced or stopped source's refresh may take to wind down (a probe in flight). */
const HALT_GRACE_MS = 2_000;

const EMPTY: SourceStatus = {
  last_fetch_at: null,
  last_count: null,
  last_added: null,
  last_invalid: null,
  last_rejected: null,
  last_error: null,
};

type Outcome = Omit<SourceStatus, 'last_fetch_at'>;

function failure(error: string): Outcome {
  return { last_count: null, last_added: 0, last_invalid: null, last_rejected: null, last_error: error };
}

export class SourceManager {
  private readonly d: SourceManagerDeps;
  /** Made on the first fetch: a Rota with no source never loads the HTTP client for it. */
  private agent: Agent | null = null;
  private running: Running[] = [];
  private stopped = false;

  constructor(deps: SourceManagerDeps) {
    this.d = deps;
  }

  /** Reads the stored list; call start() to begin fetching. */
  async load(): Promise<void> {
    const { sources, skipped } = await loadSources(this.d.store);
    if (skipped > 0)
      this.d.logger.warn({ skipped }, 'stored proxy sources that are no longer valid were skipped');
    this.running = sources.map((config) => this.make(config));
  }

  /** Fetches every source now, then every `refresh_s`. */
  start(): void {
    for (const r of this.running) this.fetchNow(r);
  }

  /** As answered: no header value, the URL's query values masked. */
  list(): SourceView[] {
    return this.running.map((r) => ({ ...shownSource(r.config), ...r.status }));
  }

  /** As run, secrets included: for `PUT sources` to keep stored header values. */
  configs(): readonly SourceConfig[] {
    return this.running.map((r) => r.config);
  }

  /** Persists the new list, then swaps it in: running fetches are cancelled, each new source fetched now. */
  async replace(sources: readonly SourceConfig[]): Promise<SourceView[]> {
    await saveSources(this.d.store, sources);
    await this.halt();
    this.running = sources.map((config) => this.make(config));
    if (!this.stopped) this.start();
    return this.list();
  }

  /** Cancels every timer and fetch, and waits for them to settle (shutdown). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.halt();
    await this.agent?.close();
  }

  private make(config: SourceConfig): Running {
    return { config, status: { ...EMPTY }, timer: null, controller: new AbortController(), run: null };
  }

  private async halt(): Promise<void> {
    const old = this.running;
    for (const r of old) {
      if (r.timer) clearTimeout(r.timer);
      r.timer = null;
      r.controller.abort();
    }
    // A fetch stops at once; a health probe in flight may not, and its refresh then adds nothing.
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, HALT_GRACE_MS);
    });
    await Promise.race([Promise.all(old.map((r) => r.run)), grace]);
    clearTimeout(timer);
  }

  private fetchNow(r: Running): void {
    r.timer = null;
    if (this.stopped || r.controller.signal.aborted || r.run) return;
    r.run = this.refresh(r)
      .catch((err: unknown) => {
        if (r.controller.signal.aborted) return failure('the fetch was cancelled');
        // Another writer of a shared store took one of the identities meanwhile: nothing was stored.
        if (err instanceof RotaError && err.code === 'PROXY_ALREADY_EXISTS') {
          return failure(
            'another writer added some of these proxies meanwhile; the next fetch adds the rest',
          );
        }
        this.d.logger.error({ err, source: r.config.name }, 'proxy source refresh failed');
        return failure('internal error while adding the proxies');
      })
      .then((outcome) => {
        if (r.controller.signal.aborted) return;
        r.status = { last_fetch_at: new Date(this.d.now()).toISOString(), ...outcome };
        if (outcome.last_error) {
          this.d.logger.warn(
            { source: r.config.name, error: outcome.last_error },
            'proxy source fetch failed',
          );
        }
      })
      .finally(() => {
        r.run = null;
        if (this.stopped || r.controller.signal.aborted) return;
        r.timer = setTimeout(() => this.fetchNow(r), r.config.refresh_s * 1000);
        r.timer.unref();
      });
  }

  private async refresh(r: Running): Promise<Outcome> {
    const { config, controller } = r;
    const signal = controller.signal;
    this.agent ??= sourceAgent(this.d.ssrf, this.d.connectTimeoutMs);
    const fetched = await fetchList(config.url, this.d.ssrf, this.agent, {
      maxBytes: this.d.maxBytes,
      timeoutMs: this.d.timeoutMs,
      signal,
      headers: config.headers,
    });
    if (!fetched.ok) return failure(fetched.error);
    const list = this.parse(config, fetched.text);
    if ('error' in list) return failure(list.error);
    const fresh = this.newOnes(list.candidates);
    const kept = config.validate ? await this.healthy(fresh, signal) : fresh;
    if (signal.aborted) return failure('the fetch was cancelled');
    const { summary } = await importList(this.d.pool, { ...list, candidates: kept }, [
      `source:${config.name}`,
    ]);
    // Entries that looked like proxies but are not (a bad port, a bad host) are invalid, not counted.
    const count = list.candidates.length - (summary.invalid_count - list.invalid.length);
    return {
      last_count: count,
      last_added: summary.created,
      last_invalid: summary.invalid_count,
      last_rejected: fresh.length - kept.length,
      last_error: count === 0 ? `no proxy in the answer (${summary.invalid_count} invalid entries)` : null,
    };
  }

  private parse(config: SourceConfig, text: string): ParsedList | { error: string } {
    if (countLines(text) > MAX_IMPORT_LINES)
      return { error: `the answer has more than ${MAX_IMPORT_LINES} lines` };
    if (config.format === 'csv') return parseCsvList(text, config.protocol);
    if (config.format === 'json') {
      const list = parseJsonList(text, config.protocol);
      if (!('error' in list) && list.lines > MAX_IMPORT_LINES) {
        return { error: `the answer has more than ${MAX_IMPORT_LINES} entries` };
      }
      return list;
    }
    return parseTextList(text, config.protocol);
  }

  /** Candidates not in the pool yet, each once (invalid ones stay: addMany reports them). */
  private newOnes(candidates: readonly Candidate[]): Candidate[] {
    const seen = new Set<string>();
    return candidates.filter((c) => {
      let key: string;
      try {
        const draft = this.d.pool.draft(c.input);
        if (this.d.pool.knows(draft)) return false;
        key = identityKey(draft);
      } catch {
        return true;
      }
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  }

  /**
   * Health-checks candidates before they join the pool, a few at a time (the checker's own bound applies
   * across every check); a cancelled refresh stops starting new probes.
   */
  private async healthy(candidates: readonly Candidate[], signal: AbortSignal): Promise<Candidate[]> {
    const verdicts = new Array<boolean>(candidates.length).fill(false);
    let next = 0;
    const worker = async () => {
      while (next < candidates.length && !signal.aborted) {
        const i = next++;
        let draft: ProxyRecord;
        try {
          draft = this.d.pool.draft(candidates[i]!.input);
        } catch {
          verdicts[i] = true; // invalid: addMany lists it with its reason
          continue;
        }
        verdicts[i] = (await this.d.health.probe(draft)).ok;
      }
    };
    await Promise.all(Array.from({ length: Math.min(PROBES_AT_ONCE, candidates.length) }, worker));
    return candidates.filter((_, i) => verdicts[i]);
  }
}

/** The manager as services.ts builds it: answers capped at ROTA_MAX_IMPORT_BYTES, 15 s at most a fetch. */
export function createSourceManager(
  config: Config,
  logger: Logger,
  deps: Pick<SourceManagerDeps, 'store' | 'pool' | 'health' | 'ssrf' | 'now'>,
): SourceManager {
  return new SourceManager({
    ...deps,
    logger,
    maxBytes: config.maxImportBytes,
    // ROTA_TIMEOUT bounds a proxied call; a source's fetch gets the same, and never more than 15 s.
    timeoutMs: Math.min(config.timeoutS, 15) * 1000,
    connectTimeoutMs: config.connectTimeoutS * 1000,
  });
}
