import { Buffer } from 'node:buffer';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { parseRate, type Rate } from './lib/rate.ts';
import { validateAllowList } from './ssrf/allow.ts';

export const STRATEGIES = [
  'round-robin',
  'random',
  'weighted',
  'least-used',
  'performance-based',
  'session-persistence',
  'geo-targeted',
] as const;
export type StrategyName = (typeof STRATEGIES)[number];

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
  readonly redisUrl: string | null;
  readonly databaseUrl: string | null;
  /** The HTTP forward-proxy listener's port; 0: off. */
  readonly proxyPort: number;
  /** The SOCKS5 listener's port; 0: off. */
  readonly socksPort: number;
  /** A tunnel or streamed body with no byte either way for this long is closed. */
  readonly tunnelIdleTimeoutS: number;
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

type Env = Readonly<Record<string, string | undefined>>;

class Reader {
  readonly problems: string[] = [];
  private readonly env: Env;
  constructor(env: Env) {
    this.env = env;
  }

  raw(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  str(name: string, def: string): string {
    return this.raw(name) ?? def;
  }

  optStr(name: string): string | null {
    return this.raw(name) ?? null;
  }

  bool(name: string, def: boolean): boolean {
    const v = this.raw(name);
    if (v === undefined) return def;
    const l = v.toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(l)) return true;
    if (['0', 'false', 'no', 'off'].includes(l)) return false;
    this.problems.push(`${name}: expected true or false, got ${JSON.stringify(v)}`);
    return def;
  }

  int(name: string, def: number, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) return def;
    const n = Number(v);
    if (!/^-?\d+$/.test(v) || !Number.isSafeInteger(n) || n < min || n > max) {
      this.problems.push(`${name}: expected an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
      return def;
    }
    return n;
  }

  num(name: string, def: number, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) return def;
    const n = Number(v);
    if (!Number.isFinite(n) || n < min || n > max) {
      this.problems.push(`${name}: expected a number from ${min} to ${max}, got ${JSON.stringify(v)}`);
      return def;
    }
    return n;
  }

  rate(name: string, def: Rate): Rate {
    const v = this.raw(name);
    if (v === undefined) return def;
    const r = parseRate(v);
    if (!r) this.problems.push(`${name}: expected N/unit (e.g. 100/minute), got ${JSON.stringify(v)}`);
    return r ?? def;
  }

  list(name: string): string[] {
    const v = this.raw(name);
    if (v === undefined) return [];
    return v
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  }
}

function parseSecretKey(r: Reader): Buffer | null {
  const v = r.raw('ROTA_SECRET_KEY');
  if (v === undefined) return null;
  if (/^[0-9a-f]{64}$/i.test(v)) return Buffer.from(v, 'hex');
  const b = Buffer.from(v, 'base64');
  if (b.length === 32 && /^[A-Za-z0-9+/]+=*$/.test(v)) return b;
  r.problems.push('ROTA_SECRET_KEY: expected 32 bytes as 64 hex digits or base64 (value not shown)');
  return null;
}

function parseCidrs(r: Reader, name: string): string[] {
  const out: string[] = [];
  for (const item of r.list(name)) {
    try {
      const cidr = item.includes('/') ? item : `${item}/${isIP(item) === 6 ? 128 : 32}`;
      ipaddr.parseCIDR(cidr);
      out.push(cidr);
    } catch {
      r.problems.push(`${name}: ${JSON.stringify(item)} is not an IP address or CIDR range`);
    }
  }
  return out;
}

function parseUrlVar(r: Reader, name: string, def: string): string {
  const v = r.str(name, def);
  try {
    const u = new URL(v);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
  } catch {
    r.problems.push(`${name}: expected an http(s) URL, got ${JSON.stringify(v)}`);
  }
  return v;
}

function parseAllowList(r: Reader, name: string): string[] {
  const list = r.list(name);
  for (const p of validateAllowList(list)) r.problems.push(`${name}: ${p}`);
  return list;
}

function parseSsrfAllow(r: Reader): string[] {
  return parseAllowList(r, 'ROTA_SSRF_ALLOW');
}

function parseStatusCodes(r: Reader, name: string, def: number[]): number[] {
  if (r.raw(name) === undefined) return def;
  const out: number[] = [];
  for (const item of r.list(name)) {
    const n = Number(item);
    if (!/^\d{3}$/.test(item) || n < 400 || n > 599) {
      r.problems.push(`${name}: ${JSON.stringify(item)} is not a status code from 400 to 599`);
    } else if (!out.includes(n)) out.push(n);
  }
  return out;
}

function parseStrategy(r: Reader): StrategyName {
  const v = r.str('ROTA_STRATEGY', 'round-robin');
  if ((STRATEGIES as readonly string[]).includes(v)) return v as StrategyName;
  r.problems.push(`ROTA_STRATEGY: expected one of ${STRATEGIES.join(', ')}, got ${JSON.stringify(v)}`);
  return 'round-robin';
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
    redisUrl: r.optStr('ROTA_REDIS_URL'),
    databaseUrl: r.optStr('ROTA_DATABASE_URL'),
    proxyPort: r.int('ROTA_PROXY_PORT', 8080, 0, 65535),
    socksPort: r.int('ROTA_SOCKS_PORT', 1080, 0, 65535),
    tunnelIdleTimeoutS: r.int('ROTA_TUNNEL_IDLE_TIMEOUT_S', 300, 1, 86_400),
    bans: {
      statusCodes: parseStatusCodes(r, 'ROTA_BAN_STATUS_CODES', [403, 429]),
      cooldownS: r.int('ROTA_BAN_COOLDOWN_S', 300, 1, 86_400),
      maxCooldownS: r.int('ROTA_BAN_MAX_COOLDOWN_S', 3600, 1, 604_800),
    },
    proxyMaxInFlight: r.int('ROTA_PROXY_MAX_IN_FLIGHT', 0, 0, 100_000),
    upstreamAllow: parseAllowList(r, 'ROTA_UPSTREAM_ALLOW'),
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
