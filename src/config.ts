import { Buffer } from 'node:buffer';
import {
  type Env,
  parseAllowList,
  parseCidrs,
  parseSecretKey,
  parseSsrfAllow,
  parseStatusCodes,
  parseUrlVar,
  Reader,
} from './config-reader.ts';
import { type CaFiles, parseCaFiles } from './inspect/ca-files.ts';
import { readPatternList } from './inspect/patterns.ts';
import { parseAllowedHosts } from './lib/allowed-hosts.ts';
import type { Rate } from './lib/rate.ts';
import { STRATEGIES, type StrategyName } from './rotation/names.ts';

export { STRATEGIES, type StrategyName };

export interface Config {
  readonly host: string;
  readonly port: number;
  readonly workers: number;
  readonly logLevel: string;
  readonly requireAuth: boolean;
  readonly apiKey: string | null;
  readonly strategy: StrategyName;
  readonly timeoutS: number;
  readonly maxRetries: number;
  readonly corsOrigins: readonly string[];
  readonly corsAllowCredentials: boolean;
  readonly storagePath: string | null;
  readonly secretKey: Buffer | null;
  readonly rateLimit: Rate;
  readonly apiKeyRateLimit: Rate;
  /** Wrong API keys one client IP may present per window, across the API and both listeners. */
  readonly authFailureLimit: Rate;
  readonly routeRateLimits: {
    readonly request: Rate;
    readonly addProxy: Rate;
    readonly config: Rate;
    readonly reset: Rate;
    readonly healthCheck: Rate;
  };
  readonly auditLog: boolean;
  readonly trustedProxies: readonly string[];
  readonly clientIpHeader: string;
  readonly ssrfAllow: readonly string[];
  readonly healthCheckUrl: string;
  readonly healthCheckConcurrency: number;
  readonly healthCheckIntervalS: number;
  /** An echo endpoint answering the caller's address (ROTA_EXIT_IP_URL); null: exits are not learned. */
  readonly exitIpUrl: string | null;
  /** A MaxMind-format .mmdb (country or city, optionally ASN) for exit countries (ROTA_GEOIP_DB). */
  readonly geoipDb: string | null;
  readonly publicMetrics: boolean;
  readonly maxBodyBytes: number;
  readonly maxResponseBytes: number;
  /** Largest bulk import (`POST proxies/import`) and largest proxy-source answer read. */
  readonly maxImportBytes: number;
  readonly connectTimeoutS: number;
  /** After this long without an answer through an unproven proxy, a GET/HEAD/OPTIONS call also asks another. 0: never. */
  readonly hedgeDelayS: number;
  readonly breaker: {
    readonly failureThreshold: number;
    readonly windowS: number;
    readonly timeoutS: number;
  };
  readonly metricsRetentionHours: number;
  /** Calls kept in the request log (GET requests); 0: off. */
  readonly requestLogSize: number;
  /** One JSON log line per call (the request log's record). */
  readonly accessLog: boolean;
  readonly redisUrl: string | null;
  readonly databaseUrl: string | null;
  /** The HTTP forward-proxy listener's port; 0: off. */
  readonly proxyPort: number;
  /** The SOCKS5 listener's port; 0: off. */
  readonly socksPort: number;
  /** A tunnel or streamed body with no byte either way for this long is closed. */
  readonly tunnelIdleTimeoutS: number;
  /** Client connections one address may hold, the API and both listeners together. */
  readonly maxConnectionsPerIp: number;
  /** Client connections of all clients together; null: half the open-file limit (lib/fd-limit.ts). */
  readonly maxConnections: number | null;
  /** Ban detection defaults (the ban policy's, until `PUT ban-policy` changes them). */
  readonly bans: {
    readonly statusCodes: readonly number[];
    readonly cooldownS: number;
    readonly maxCooldownS: number;
  };
  /** Attempts in flight through one proxy at most; 0: no cap. */
  readonly proxyMaxInFlight: number;
  /** When set, the only proxy hosts Rota connects to (CIDRs and names); empty: any. */
  readonly upstreamAllow: readonly string[];
  /** Host names (optionally `:port`) the HTTP API answers for; `*`: any (origin-guard.ts). */
  readonly allowedHosts: readonly string[];
  /** HTTPS inspection's CA: the operator's (ROTA_CA_CERT + ROTA_CA_KEY, checked here), or null: Rota's own. */
  readonly inspectCa: CaFiles | null;
  /** Leaf TLS contexts inspection keeps at most, least recently used out (ROTA_INSPECT_CACHE). */
  readonly inspectCacheMax: number;
  /** Hosts one client address may have a new leaf made for, per minute (each costs ~5 ms of CPU). */
  readonly inspectNewHostsPerMinute: number;
  /** Host patterns whose tunnels are inspected without the client asking (ROTA_INSPECT_HOSTS); empty: none. */
  readonly inspectHosts: readonly string[];
  /** The MCP server at /mcp on the API port (ROTA_MCP); `rota mcp` serves stdio whatever it says. */
  readonly mcp: boolean;
  /** Session terms where no policy rule sets them (rotation/sessions.ts). */
  readonly sessions: SessionDefaults;
  /** The HTTP listener answers 407 to a request without Proxy-Authorization even with auth off. */
  readonly proxyChallenge: boolean;
}

export interface SessionDefaults {
  /** Seconds without a use after which a session is forgotten. */
  readonly idleTtlS: number;
  /** Seconds after which a session is pinned anew however busy; 0: never. */
  readonly maxTtlS: number;
  /** Requests after which a session is pinned anew (rotate every N); 0: never. */
  readonly maxRequests: number;
  /** `all`: one pin for every target; `host`: one pin per target host. */
  readonly scope: 'all' | 'host';
  /** `rotate`: a ban moves the session to another proxy; `keep`: the pin stays, the ban is the answer. */
  readonly onBan: 'rotate' | 'keep';
}

/** Thrown with every problem found, one line each, so that an operator fixes them all in one go. */
export class ConfigError extends Error {
  readonly code = 'CONFIGURATION_ERROR';
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.problems = problems;
  }
}

function parseStrategy(r: Reader): StrategyName {
  const v = r.str('ROTA_STRATEGY', 'round-robin');
  if ((STRATEGIES as readonly string[]).includes(v)) return v as StrategyName;
  r.problems.push(`ROTA_STRATEGY: expected one of ${STRATEGIES.join(', ')}, got ${JSON.stringify(v)}`);
  return 'round-robin';
}

/** One of `values` (the first is the default). */
function oneOf<T extends string>(r: Reader, name: string, values: readonly [T, ...T[]]): T {
  const v = r.str(name, values[0]);
  if ((values as readonly string[]).includes(v)) return v as T;
  r.problems.push(`${name}: expected one of ${values.join(', ')}, got ${JSON.stringify(v.slice(0, 50))}`);
  return values[0];
}

function crossChecks(r: Reader, c: Config): void {
  if (c.requireAuth && !c.apiKey) r.problems.push('ROTA_API_KEY: required when ROTA_REQUIRE_AUTH=true');
  if (c.corsOrigins.includes('*') && c.corsAllowCredentials) {
    r.problems.push(
      'ROTA_CORS_ORIGINS: the wildcard "*" cannot be combined with ROTA_CORS_ALLOW_CREDENTIALS=true',
    );
  }
  if (c.databaseUrl !== null && r.raw('ROTA_SECRET_KEY') === undefined) {
    r.problems.push(
      'ROTA_SECRET_KEY: required when ROTA_DATABASE_URL is set (credentials are encrypted with it)',
    );
  }
  if (c.bans.maxCooldownS < c.bans.cooldownS) {
    r.problems.push('ROTA_BAN_MAX_COOLDOWN_S: must be at least ROTA_BAN_COOLDOWN_S');
  }
  const ports = [c.port, c.proxyPort, c.socksPort].filter((p) => p !== 0);
  if (new Set(ports).size !== ports.length) {
    r.problems.push(
      'ROTA_PROXY_PORT, ROTA_SOCKS_PORT: each listener needs a port of its own (ROTA_PORT too)',
    );
  }
  if (c.workers > 1 && !c.redisUrl) {
    r.problems.push('ROTA_WORKERS: more than 1 worker needs shared state (ROTA_REDIS_URL)');
  }
  if (c.workers > 1 && !c.storagePath && !c.databaseUrl) {
    r.problems.push(
      'ROTA_WORKERS: more than 1 worker needs a shared pool (ROTA_STORAGE_PATH or ROTA_DATABASE_URL)',
    );
  }
}

/** Reads every `ROTA_*` variable once; returns a frozen config or throws ConfigError with all problems. */
export function loadConfig(env: Env = process.env): Config {
  const r = new Reader(env);
  const rateLimit = r.rate('ROTA_RATE_LIMIT', { limit: 100, windowMs: 60_000 });
  const config: Config = {
    host: r.str('ROTA_HOST', '127.0.0.1'),
    port: r.int('ROTA_PORT', 8000, 0, 65535),
    workers: r.int('ROTA_WORKERS', 1, 1, 64),
    logLevel: r.str('ROTA_LOG_LEVEL', 'info').toLowerCase(),
    requireAuth: r.bool('ROTA_REQUIRE_AUTH', false),
    apiKey: r.optStr('ROTA_API_KEY'),
    strategy: parseStrategy(r),
    timeoutS: r.int('ROTA_TIMEOUT', 30, 1, 300),
    maxRetries: r.int('ROTA_MAX_RETRIES', 3, 1, 10),
    corsOrigins: r.list('ROTA_CORS_ORIGINS'),
    corsAllowCredentials: r.bool('ROTA_CORS_ALLOW_CREDENTIALS', true),
    storagePath: r.optStr('ROTA_STORAGE_PATH'),
    secretKey: parseSecretKey(r),
    rateLimit,
    apiKeyRateLimit: r.rate('ROTA_API_KEY_RATE_LIMIT', rateLimit),
    authFailureLimit: r.rate('ROTA_AUTH_FAILURE_LIMIT', { limit: 30, windowMs: 60_000 }),
    routeRateLimits: {
      request: r.rate('ROTA_RATE_LIMIT_REQUEST', { limit: 50, windowMs: 60_000 }),
      addProxy: r.rate('ROTA_RATE_LIMIT_ADD_PROXY', { limit: 10, windowMs: 60_000 }),
      config: r.rate('ROTA_RATE_LIMIT_CONFIG', { limit: 5, windowMs: 60_000 }),
      reset: r.rate('ROTA_RATE_LIMIT_RESET', { limit: 10, windowMs: 60_000 }),
      // Each health check fans out to the whole pool: an amplifier, so it gets a tight limit.
      healthCheck: r.rate('ROTA_RATE_LIMIT_HEALTH_CHECK', { limit: 10, windowMs: 60_000 }),
    },
    auditLog: r.bool('ROTA_AUDIT_LOG', true),
    trustedProxies: parseCidrs(r, 'ROTA_TRUSTED_PROXIES'),
    clientIpHeader: r.str('ROTA_CLIENT_IP_HEADER', 'X-Forwarded-For').toLowerCase(),
    ssrfAllow: parseSsrfAllow(r),
    healthCheckUrl: parseUrlVar(r, 'ROTA_HEALTH_CHECK_URL', 'http://www.gstatic.com/generate_204'),
    healthCheckConcurrency: r.int('ROTA_HEALTH_CHECK_CONCURRENCY', 50, 1, 10_000),
    healthCheckIntervalS: r.int('ROTA_HEALTH_CHECK_INTERVAL_S', 0, 0, 86_400),
    exitIpUrl: r.optStr('ROTA_EXIT_IP_URL') === null ? null : parseUrlVar(r, 'ROTA_EXIT_IP_URL', ''),
    geoipDb: r.optStr('ROTA_GEOIP_DB'),
    publicMetrics: r.bool('ROTA_PUBLIC_METRICS', false),
    maxBodyBytes: r.int('ROTA_MAX_BODY_BYTES', 1_048_576, 1_024, 1_073_741_824),
    maxResponseBytes: r.int('ROTA_MAX_RESPONSE_BYTES', 10_485_760, 1_024, 1_073_741_824),
    maxImportBytes: r.int('ROTA_MAX_IMPORT_BYTES', 16_777_216, 1_024, 1_073_741_824),
    connectTimeoutS: r.num('ROTA_CONNECT_TIMEOUT_S', 5, 0.1, 300),
    hedgeDelayS: r.num('ROTA_HEDGE_DELAY_S', 1, 0, 300),
    breaker: {
      failureThreshold: r.int('ROTA_BREAKER_FAILURE_THRESHOLD', 5, 1, 1_000),
      windowS: r.num('ROTA_BREAKER_WINDOW_S', 60, 1, 86_400),
      timeoutS: r.num('ROTA_BREAKER_TIMEOUT_S', 30, 0.1, 86_400),
    },
    metricsRetentionHours: r.int('ROTA_METRICS_RETENTION_HOURS', 24, 1, 720),
    requestLogSize: r.int('ROTA_REQUEST_LOG_SIZE', 10_000, 0, 1_000_000),
    accessLog: r.bool('ROTA_ACCESS_LOG', false),
    redisUrl: r.optStr('ROTA_REDIS_URL'),
    databaseUrl: r.optStr('ROTA_DATABASE_URL'),
    proxyPort: r.int('ROTA_PROXY_PORT', 8080, 0, 65535),
    socksPort: r.int('ROTA_SOCKS_PORT', 1080, 0, 65535),
    tunnelIdleTimeoutS: r.int('ROTA_TUNNEL_IDLE_TIMEOUT_S', 300, 1, 86_400),
    maxConnectionsPerIp: r.int('ROTA_MAX_CONNECTIONS_PER_IP', 256, 1, 1_000_000),
    maxConnections:
      r.raw('ROTA_MAX_CONNECTIONS') === undefined ? null : r.int('ROTA_MAX_CONNECTIONS', 0, 1, 10_000_000),
    bans: {
      statusCodes: parseStatusCodes(r, 'ROTA_BAN_STATUS_CODES', [403, 429]),
      cooldownS: r.int('ROTA_BAN_COOLDOWN_S', 300, 1, 86_400),
      maxCooldownS: r.int('ROTA_BAN_MAX_COOLDOWN_S', 3600, 1, 604_800),
    },
    proxyMaxInFlight: r.int('ROTA_PROXY_MAX_IN_FLIGHT', 0, 0, 100_000),
    upstreamAllow: parseAllowList(r, 'ROTA_UPSTREAM_ALLOW'),
    allowedHosts: parseAllowedHosts(r, r.str('ROTA_HOST', '127.0.0.1')),
    inspectCa: parseCaFiles(r),
    inspectCacheMax: r.int('ROTA_INSPECT_CACHE', 10_000, 1, 10_000_000),
    inspectNewHostsPerMinute: r.int('ROTA_INSPECT_NEW_HOSTS_PER_MINUTE', 600, 1, 10_000_000),
    inspectHosts: readPatternList(r, 'ROTA_INSPECT_HOSTS'),
    mcp: r.bool('ROTA_MCP', true),
    sessions: {
      idleTtlS: r.int('ROTA_SESSION_IDLE_TTL_S', 600, 1, 86_400),
      maxTtlS: r.int('ROTA_SESSION_MAX_TTL_S', 0, 0, 86_400),
      maxRequests: r.int('ROTA_SESSION_MAX_REQUESTS', 0, 0, 10_000_000),
      scope: oneOf(r, 'ROTA_SESSION_SCOPE', ['all', 'host'] as const),
      onBan: oneOf(r, 'ROTA_SESSION_ON_BAN', ['rotate', 'keep'] as const),
    },
    proxyChallenge: r.bool('ROTA_PROXY_CHALLENGE', false),
  };
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(config.logLevel)) {
    r.problems.push(
      `ROTA_LOG_LEVEL: expected fatal|error|warn|info|debug|trace|silent, got ${config.logLevel}`,
    );
  }
  crossChecks(r, config);
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return deepFreeze(config);
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Buffer.isBuffer(o)) {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}
