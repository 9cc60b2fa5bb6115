import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { BreakerStateName } from '../breaker/types.ts';
import {
  ATTEMPT_OUTCOMES,
  type AttemptOutcome,
  type AttemptRecord,
  type CallRecord,
  retriesOf,
  safeMs,
} from './calls.ts';
import { BREAKER_STATE_VALUE, EXPOSITION_CONTENT_TYPE } from './exposition.ts';
import { renameProcessTotals } from './process-gauges.ts';
import { TallyCounter, TallyHistogram } from './tallies.ts';

export {
  type BreakerMetricsInput,
  EXPOSITION_CONTENT_TYPE,
  renderBreakerMetrics,
  renderRetryMetrics,
} from './exposition.ts';

/** The endpoint label of a request no route matched: one series for every 404 path. */
export const UNMATCHED_ENDPOINT = 'unmatched';
/** The endpoint label once `maxEndpoints` distinct templates were seen (a guard, never reached normally). */
export const OVERFLOW_ENDPOINT = 'other';

const HTTP_METHODS: ReadonlySet<string> = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'PATCH',
  'OPTIONS',
  'TRACE',
  'CONNECT',
]);

export interface PoolCounts {
  readonly total: number;
  readonly healthy: number;
}

export interface BreakerStateSample {
  readonly proxyId: string;
  readonly state: BreakerStateName;
}

export interface PromMetricsOptions {
  /** Read at scrape time. */
  readonly poolCounts: () => PoolCounts;
  /** Read at scrape time; a proxy missing here has no breaker series. */
  readonly breakerStates: () => Iterable<BreakerStateSample>;
  /** When given, records for a proxy that no longer exists are dropped (a call in flight at deletion). */
  readonly proxyExists?: (proxyId: string) => boolean;
  /** Process metrics (CPU, memory, event loop, GC), prefixed rota_. Default true. */
  readonly defaultMetrics?: boolean;
  /** Active ban cool-downs, read at scrape time. */
  readonly cooldownsActive?: () => number;
  /** Distinct endpoint labels allowed before new ones collapse into `other`. Default 256. */
  readonly maxEndpoints?: number;
}

const HTTP_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const UPSTREAM_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The tally rows one HTTP answer goes to (PromMetrics.observeHttp). */
interface HttpKeys {
  readonly count: string;
  readonly countLabels: Readonly<Record<'endpoint' | 'method' | 'status', string>>;
  readonly duration: string;
  readonly durationLabels: Readonly<Record<'endpoint' | 'method', string>>;
}

/** Combinations of route, method and status whose keys are kept; past it, keys are made per call. */
const MAX_HTTP_KEYS = 4096;

function httpKeys(ep: string, method: string, status: number): HttpKeys {
  const upper = method.toUpperCase();
  const m = HTTP_METHODS.has(upper) ? upper : 'OTHER';
  const st = Number.isInteger(status) && status >= 100 && status <= 599 ? String(status) : 'other';
  const duration = `${m} ${ep}`;
  return {
    count: `${st} ${duration}`,
    countLabels: { endpoint: ep, method: m, status: st },
    duration,
    durationLabels: { endpoint: ep, method: m },
  };
}

/**
 * /metrics over a private registry, so that two app instances (tests) never share series. Labels are
 * bounded: endpoint is a route template (or `unmatched`), method a known verb, proxy_id a UUID.
 */
export class PromMetrics {
  readonly registry = new Registry();
  readonly contentType: string = EXPOSITION_CONTENT_TYPE;
  readonly #proxyExists: ((proxyId: string) => boolean) | undefined;
  readonly #maxEndpoints: number;
  readonly #endpoints = new Set<string>();
  /** observeHttp's keys by raw route template, method and status (#httpKeysOf). */
  readonly #httpKeys = new Map<string | undefined, Map<string, Map<number, HttpKeys>>>();
  #httpKeyCount = 0;
  /**
   * Proxies that have series, so removal touches only what exists and the existence check runs once;
   * with each its attempt tally keys, made once (a key built per attempt was a new string to hash).
   */
  readonly #proxies = new Map<string, Readonly<Record<AttemptOutcome, string>>>();
  // Written on every request or call: tallies (tallies.ts), turned into series when scraped.
  readonly #httpRequests: TallyCounter;
  readonly #httpDuration: TallyHistogram;
  readonly #attempts: TallyCounter;
  readonly #upstreamLatency: TallyHistogram;
  readonly #proxied: TallyCounter;
  readonly #retries: Counter;
  readonly #rateLimited: Counter<'endpoint'>;
  readonly #bans: Counter<'status'>;

  constructor(opts: PromMetricsOptions) {
    this.#proxyExists = opts.proxyExists;
    this.#maxEndpoints = opts.maxEndpoints ?? 256;
    const registers = [this.registry];
    this.#httpRequests = new TallyCounter(
      { name: 'rota_requests_total', help: 'HTTP requests served, by route template, method and status' },
      this.registry,
    );
    this.#httpDuration = new TallyHistogram(
      {
        name: 'rota_request_duration_seconds',
        help: 'HTTP request duration, by route template and method',
        buckets: HTTP_BUCKETS,
      },
      this.registry,
    );
    this.#attempts = new TallyCounter(
      { name: 'rota_upstream_attempts_total', help: 'Attempts sent through each proxy, by outcome' },
      this.registry,
    );
    this.#upstreamLatency = new TallyHistogram(
      {
        name: 'rota_upstream_latency_seconds',
        help: 'Latency of attempts through each proxy',
        buckets: UPSTREAM_BUCKETS,
      },
      this.registry,
    );
    this.#retries = new Counter({
      name: 'rota_retries_total',
      help: 'Attempts after the first one of a proxied call',
      registers,
    });
    this.#rateLimited = new Counter({
      name: 'rota_rate_limit_rejections_total',
      help: 'Requests rejected with 429, by route template',
      labelNames: ['endpoint'],
      registers,
    });
    this.#proxied = new TallyCounter(
      {
        name: 'rota_requests_proxied_total',
        help: 'Proxied calls (POST request), by outcome: success or the error code returned',
      },
      this.registry,
    );
    this.#bans = new Counter({
      name: 'rota_bans_total',
      help: 'Target answers taken as a ban of the proxy (a cool-down of the pair proxy, host), by status',
      labelNames: ['status'],
      registers,
    });
    new Gauge({
      name: 'rota_proxy_cooldowns_active',
      help: 'Pairs (proxy, target host) cooling down after a ban',
      registers,
      collect() {
        this.set(opts.cooldownsActive?.() ?? 0);
      },
    });
    registerScrapeGauges(this.registry, opts);
    if (opts.defaultMetrics ?? true) {
      collectDefaultMetrics({ register: this.registry, prefix: 'rota_' });
      renameProcessTotals(this.registry);
    }
  }

  /** `endpoint` is the matched route template (Fastify `routeOptions.url`); undefined when none matched. */
  observeHttp(endpoint: string | undefined, method: string, status: number, seconds: number): void {
    const k = this.#httpKeysOf(endpoint, method, status);
    this.#httpRequests.inc(k.count, k.countLabels);
    this.#httpDuration.observe(
      k.duration,
      k.durationLabels,
      Number.isFinite(seconds) && seconds > 0 ? seconds : 0,
    );
  }

  /**
   * The tally keys and labels of one (route, method, status), made once: built per request, the two key
   * strings were new strings to hash and compare on every call (perf: Runtime_StringEqual under
   * observeHttp). Looked up by the raw values, which are Fastify's and node:http's own constant strings.
   */
  #httpKeysOf(endpoint: string | undefined, method: string, status: number): HttpKeys {
    const cached = this.#httpKeys.get(endpoint)?.get(method)?.get(status);
    if (cached) return cached;
    const k = httpKeys(this.#endpoint(endpoint), method, status);
    if (this.#httpKeyCount >= MAX_HTTP_KEYS) return k;
    this.#httpKeyCount++;
    const byMethod = this.#httpKeys.get(endpoint) ?? new Map<string, Map<number, HttpKeys>>();
    const byStatus = byMethod.get(method) ?? new Map<number, HttpKeys>();
    byStatus.set(status, k);
    byMethod.set(method, byStatus);
    this.#httpKeys.set(endpoint, byMethod);
    return k;
  }

  recordCall(call: CallRecord): void {
    const outcome = call.ok ? 'success' : outcomeLabel(call.errorCode);
    this.#proxied.inc(outcome, { outcome });
    const retries = retriesOf(call);
    if (retries > 0) this.#retries.inc(retries);
    for (const a of call.attempts) this.recordAttempt(a);
  }

  /** One attempt's per-proxy series; also for an attempt that ended after its call was reported. */
  recordAttempt(a: AttemptRecord): void {
    const keys = this.#keysOf(a.proxyId);
    if (keys === undefined) return;
    this.#attempts.inc(keys[a.outcome], { proxy_id: a.proxyId, outcome: a.outcome });
    this.#upstreamLatency.observe(a.proxyId, { proxy_id: a.proxyId }, safeMs(a.latencyMs) / 1000);
  }

  /** A ban; `status` is the target's status (a body-pattern ban may have any). */
  recordBan(status: number): void {
    this.#bans.inc({
      status: Number.isInteger(status) && status >= 100 && status <= 599 ? String(status) : 'other',
    });
  }

  rateLimited(endpoint: string | undefined): void {
    this.#rateLimited.inc({ endpoint: this.#endpoint(endpoint) });
  }

  /** A deleted proxy's series disappear from the next scrape. */
  removeProxy(proxyId: string): void {
    const keys = this.#proxies.get(proxyId);
    if (keys === undefined) return;
    this.#proxies.delete(proxyId);
    for (const outcome of ATTEMPT_OUTCOMES) this.#attempts.delete(keys[outcome]);
    this.#upstreamLatency.delete(proxyId);
  }

  #renderer: (() => Promise<string>) | null = null;

  /** With ROTA_WORKERS > 1: `/metrics` shows every worker of the instance (workers/metrics-ipc.ts). */
  setRenderer(render: () => Promise<string>): void {
    this.#renderer = render;
  }

  render(): Promise<string> {
    return this.#renderer ? this.#renderer() : this.registry.metrics();
  }

  /** The proxy's attempt tally keys; undefined for a proxy that no longer exists (no series for it). */
  #keysOf(proxyId: string): Readonly<Record<AttemptOutcome, string>> | undefined {
    const known = this.#proxies.get(proxyId);
    if (known !== undefined) return known;
    if (this.#proxyExists && !this.#proxyExists(proxyId)) return undefined;
    const keys = Object.fromEntries(ATTEMPT_OUTCOMES.map((o) => [o, `${o} ${proxyId}`])) as Record<
      AttemptOutcome,
      string
    >;
    this.#proxies.set(proxyId, keys);
    return keys;
  }

  #endpoint(endpoint: string | undefined): string {
    if (!endpoint) return UNMATCHED_ENDPOINT;
    if (this.#endpoints.has(endpoint)) return endpoint;
    if (this.#endpoints.size >= this.#maxEndpoints) return OVERFLOW_ENDPOINT;
    this.#endpoints.add(endpoint);
    return endpoint;
  }
}

/** Gauges computed from live state when scraped, so they can never drift from the pool and breakers. */
function registerScrapeGauges(registry: Registry, opts: PromMetricsOptions): void {
  const registers = [registry];
  new Gauge({
    name: 'rota_proxies_total',
    help: 'Proxies in the pool',
    registers,
    collect() {
      this.set(opts.poolCounts().total);
    },
  });
  new Gauge({
    name: 'rota_proxies_healthy',
    help: 'Proxies in the pool whose health is healthy',
    registers,
    collect() {
      this.set(opts.poolCounts().healthy);
    },
  });
  new Gauge({
    name: 'rota_circuit_breaker_state',
    help: 'Circuit breaker state per proxy (0 closed, 1 open, 2 half-open)',
    labelNames: ['proxy_id'],
    registers,
    collect() {
      this.reset();
      for (const b of opts.breakerStates()) this.set({ proxy_id: b.proxyId }, BREAKER_STATE_VALUE[b.state]);
    },
  });
  // Three series whatever the pool size: what an alert ("more than N breakers open") reads, where the
  // per-proxy gauge above grows with the pool.
  new Gauge({
    name: 'rota_circuit_breakers',
    help: 'Proxies in the pool by circuit-breaker state',
    labelNames: ['state'],
    registers,
    collect() {
      const counts = { closed: 0, open: 0, 'half-open': 0 };
      for (const b of opts.breakerStates()) counts[b.state]++;
      for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
    },
  });
}

/** Error codes are a fixed set of upper-case names; anything else collapses so it cannot add series. */
function outcomeLabel(code: string | undefined): string {
  return code && /^[A-Z][A-Z0-9_]{0,63}$/.test(code) ? code.toLowerCase() : 'error';
}
