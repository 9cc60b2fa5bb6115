/**
 * The dashboard's compact endpoints under /api/v1/dashboard, all behind the API key like the rest of the
 * API: `info` once per page load, `live` every second (new series samples, breaker events and bans since
 * the page's cursors, pool counts), `proxies` for one page of the pool table. The page never pulls the
 * whole pool. `info` and `live` are exempt from the rate limit for callers allowed to read them (like
 * /metrics: a watching operator must not be throttled), and their pool-wide parts are computed at most
 * twice a second whatever the number of open dashboards.
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { type Static, Type } from 'typebox';
import type { Cooldown } from '../../bans/cooldowns.ts';
import { BREAKER_STATES, type BreakerEvent } from '../../breaker/types.ts';
import { SERIES_SECONDS } from '../../metrics/series.ts';
import { HEALTH_VALUES } from '../../pool/types.ts';
import { STRATEGIES } from '../../rotation/names.ts';
import { Envelope, errorResponses } from '../../schemas/common.ts';
import {
  type Info,
  InfoSchema,
  type Live,
  LiveSchema,
  type ProxiesPage,
  ProxiesPageSchema,
} from '../../schemas/dashboard.ts';
import type { Services } from '../../services.ts';
import { VERSION } from '../../version.ts';
import { SORT_KEYS, type TableQuery, tablePage } from '../dashboard-table.ts';
import { ok } from '../envelope.ts';

const TAG = ['dashboard'];
export const LIVE_POLL_MS = 1_000;
export const TABLE_POLL_MS = 3_000;
const MEMO_MS = 500;
const MAX_EVENTS = 100;
const MAX_BANS = 20;

const LiveQuery = Type.Object({
  since: Type.Integer({ minimum: 0, maximum: 1e11, default: 0, description: 'Epoch s: samples after it' }),
  events_since: Type.Integer({
    minimum: 0,
    maximum: 1e14,
    default: 0,
    description: 'Epoch ms: breaker events at or after it (the last 15 minutes at most)',
  }),
});

const ProxiesQuery = Type.Object({
  page: Type.Integer({ minimum: 1, maximum: 10_000_000, default: 1 }),
  page_size: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
  sort: Type.Enum([...SORT_KEYS], { default: 'created' }),
  order: Type.Enum(['asc', 'desc'], { default: 'asc' }),
  q: Type.Optional(Type.String({ maxLength: 200, description: 'Part of the URL or id, or a country' })),
  breaker: Type.Optional(Type.Enum([...BREAKER_STATES])),
  health: Type.Optional(Type.Enum([...HEALTH_VALUES])),
});

/** `fn()` at most once per MEMO_MS; callers in between share the value. */
function memo<T>(now: () => number, fn: () => T): () => T {
  let at = Number.NEGATIVE_INFINITY;
  let value: T | undefined;
  return () => {
    const t = now();
    if (value === undefined || t - at >= MEMO_MS) {
      value = fn();
      at = t;
    }
    return value;
  };
}

function poolCounts(services: Services) {
  let healthy = 0;
  let unhealthy = 0;
  let checked = 0;
  let inFlight = 0;
  const breakers = { closed: 0, half_open: 0, open: 0 };
  for (const e of services.pool.all()) {
    if (e.health === 'healthy') healthy++;
    else if (e.health !== 'unknown') unhealthy++;
    if (e.health !== 'unknown') checked++;
    inFlight += e.inFlight;
    const s = services.breakers.state(e.record.id);
    if (s === 'open') breakers.open++;
    else if (s === 'half-open') breakers.half_open++;
    else breakers.closed++;
  }
  return { total: services.pool.size, healthy, unhealthy, checked, breakers, in_flight: inFlight };
}

interface Ctx {
  readonly services: Services;
  readonly urlOf: (id: string) => string | null;
  readonly counts: () => ReturnType<typeof poolCounts>;
  readonly recentEvents: () => BreakerEvent[];
  readonly bans: () => { active: number; recent: Cooldown[] };
}

function infoRoute(app: FastifyInstance, { services }: Ctx): void {
  const { breakers, settings } = services;
  let bulkImport: boolean | undefined;
  app.get(
    '/dashboard/info',
    {
      config: { rateLimit: false },
      schema: {
        tags: TAG,
        summary: 'What the dashboard needs to start (strategies, capabilities, poll periods)',
        response: { 200: Envelope(InfoSchema), ...errorResponses() },
      },
    },
    async (req) => {
      // Routes are all known once the app is ready; asked on first use.
      bulkImport ??= app.hasRoute({ method: 'POST', url: '/api/v1/proxies/import' });
      return ok<Info>(req, {
        version: VERSION,
        auth_enabled: services.config.requireAuth,
        strategy: settings.get().rotation_strategy,
        strategies: [...STRATEGIES],
        bulk_import: bulkImport,
        breaker: {
          failure_threshold: breakers.settings.failureThreshold,
          window_s: breakers.settings.windowS,
          timeout_s: breakers.settings.timeoutS,
        },
        series_interval_s: 1,
        series_window_s: SERIES_SECONDS,
        live_poll_ms: LIVE_POLL_MS,
        table_poll_ms: TABLE_POLL_MS,
      });
    },
  );
}

function liveRoute(app: FastifyInstance, ctx: Ctx): void {
  const { clock, settings, series } = ctx.services;
  const eventView = (e: BreakerEvent) => ({
    proxy_id: e.proxy_id,
    url: ctx.urlOf(e.proxy_id),
    from_state: e.from_state,
    to_state: e.to_state,
    reason: e.reason,
    failure_count: e.failure_count,
    timestamp: e.timestamp,
  });
  const banView = (c: Cooldown) => ({
    proxy_id: c.proxyId,
    url: ctx.urlOf(c.proxyId),
    host: c.host,
    since: c.since,
    until: c.until,
    count: c.count,
  });
  app.get<{ Querystring: Static<typeof LiveQuery> }>(
    '/dashboard/live',
    {
      config: { rateLimit: false },
      schema: {
        tags: TAG,
        summary: 'Live figures: series samples, breaker events and bans since the given cursors',
        querystring: LiveQuery,
        response: { 200: Envelope(LiveSchema), ...errorResponses(422) },
      },
    },
    async (req) => {
      const { since, events_since } = req.query;
      const events = ctx.recentEvents().filter((e) => e.timestamp >= events_since);
      const bans = ctx.bans();
      return ok<Live>(req, {
        now: clock.now(),
        strategy: settings.get().rotation_strategy,
        series: series.samples(since),
        pool: ctx.counts(),
        breaker_events: events.slice(-MAX_EVENTS).map(eventView),
        bans: { active: bans.active, recent: bans.recent.map(banView) },
      });
    },
  );
}

function proxiesRoute(app: FastifyInstance, { services }: Ctx): void {
  app.get<{ Querystring: Static<typeof ProxiesQuery> }>(
    '/dashboard/proxies',
    {
      schema: {
        tags: TAG,
        summary: 'One page of the pool table: sorted and filtered on the server',
        querystring: ProxiesQuery,
        response: { 200: Envelope(ProxiesPageSchema), ...errorResponses(422) },
      },
    },
    async (req) => ok<ProxiesPage>(req, tablePage(services, req.query as TableQuery)),
  );
}

export function dashboardApiRoutes(services: Services): FastifyPluginAsync {
  const { pool, breakers, clock, cooldowns } = services;
  const ctx: Ctx = {
    services,
    urlOf: (id) => pool.get(id)?.url ?? null,
    counts: memo(clock.monotonic, () => poolCounts(services)),
    recentEvents: memo(clock.monotonic, () => breakers.events(clock.now() - SERIES_SECONDS * 1000)),
    bans: memo(clock.monotonic, () => {
      const active = cooldowns.active();
      return { active: active.length, recent: active.slice(-MAX_BANS) };
    }),
  };
  return async (app) => {
    infoRoute(app, ctx);
    liveRoute(app, ctx);
    proxiesRoute(app, ctx);
  };
}
