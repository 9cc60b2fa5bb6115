/**
 * A policy list compiled for the call prelude (outbound/prelude.ts): which rule applies to a call, in a
 * few map lookups whatever the number of rules.
 *
 *   host ──▶ per-host cache ──miss──▶ exact names · each parent name (`*.x`) · `*`  ──▶ rules in list order
 *                                                                                      │
 *   first of them whose paths and methods fit the call ◀──────────────────────────────┘
 *
 * A list of 200 rules costs what a list of one does once a host is cached; the cache is bounded and
 * starts over when full (a crawl of ever new hosts pays the index walk, ~1 µs, per new host).
 */
import type { BanPolicy } from '../bans/policy.ts';
import { checkPattern, normalizeHost } from '../inspect/patterns.ts';
import type { StrategyName } from '../rotation/names.ts';
import type { PolicyList, RuleInput } from './schema.ts';

/** Who may serve a rule's calls, besides the usual (breakers, cool-downs, country asked). */
export interface ProxyFilter {
  readonly tagsAny: ReadonlySet<string> | null;
  readonly tagsNone: ReadonlySet<string> | null;
  readonly countries: ReadonlySet<string> | null;
}

/** A rule as the engine reads it. */
export interface Rule {
  readonly name: string;
  /** Its place in the list (0 first). */
  readonly index: number;
  readonly paths: readonly string[] | null;
  readonly methods: ReadonlySet<string> | null;
  readonly filter: ProxyFilter | null;
  readonly strategy: StrategyName | undefined;
  readonly ban: Partial<Pick<BanPolicy, 'status_codes' | 'body_patterns' | 'cooldown_s'>> | undefined;
  readonly retry: { readonly max_attempts?: number; readonly retry_non_idempotent?: boolean } | undefined;
  readonly maxInFlight: number | undefined;
  readonly minIntervalMs: number | undefined;
  /** Least time between two requests to one host across the pool (host_rate_limit, spaced evenly). */
  readonly hostIntervalMs: number | undefined;
  readonly session: RuleInput['session'];
  readonly inspect: boolean | undefined;
}

/** What a call shows of itself to be matched; a tunnel has neither path nor method. */
export interface MatchQuery {
  readonly host: string;
  readonly path?: string | undefined;
  readonly method?: string | undefined;
}

const HOST_CACHE_MAX = 10_000;
const NONE: readonly Rule[] = Object.freeze([]);

export class RuleBook {
  readonly rules: readonly Rule[];
  readonly #exact = new Map<string, number[]>();
  readonly #suffix = new Map<string, number[]>();
  readonly #all: number[] = [];
  readonly #cache = new Map<string, readonly Rule[]>();

  constructor(list: PolicyList) {
    this.rules = list.rules.map(compileRule);
    list.rules.forEach((r, i) => {
      for (const input of r.match.hosts) this.#index(input, i);
    });
  }

  get size(): number {
    return this.rules.length;
  }

  /** The rule that applies to the call, or null (the global settings alone). */
  match(q: MatchQuery): Rule | null {
    if (this.rules.length === 0) return null;
    let path: string | undefined | null = null;
    for (const r of this.forHost(q.host)) {
      // The path as the site reads it, worked out once, only when a rule names paths.
      if (r.paths !== null && path === null) path = q.path === undefined ? undefined : matchedPath(q.path);
      if (fits(r, q, path ?? undefined)) return r;
    }
    return null;
  }

  /** The rules whose host patterns name `host`, in list order. */
  forHost(host: string): readonly Rule[] {
    const cached = this.#cache.get(host);
    if (cached !== undefined) return cached;
    const found = this.#lookup(normalizeHost(host));
    if (this.#cache.size >= HOST_CACHE_MAX) this.#cache.clear();
    this.#cache.set(host, found);
    return found;
  }

  #lookup(h: string): readonly Rule[] {
    const at: number[] = [...(this.#exact.get(h) ?? []), ...this.#all];
    for (let i = h.indexOf('.'); i !== -1; i = h.indexOf('.', i + 1)) {
      const s = this.#suffix.get(h.slice(i + 1));
      if (s !== undefined) at.push(...s);
    }
    if (at.length === 0) return NONE;
    return [...new Set(at)].sort((a, b) => a - b).map((i) => this.rules[i] as Rule);
  }

  #index(input: string, i: number): void {
    const c = checkPattern(input);
    // A pattern stored by another version that no longer passes is left out, as inspection does.
    if (!c.ok) return;
    if (c.pattern === '*') this.#all.push(i);
    else if (c.pattern.startsWith('*.')) push(this.#suffix, c.pattern.slice(2), i);
    else push(this.#exact, c.pattern, i);
  }
}

function push(m: Map<string, number[]>, key: string, i: number): void {
  const list = m.get(key);
  if (list === undefined) m.set(key, [i]);
  else if (list[list.length - 1] !== i) list.push(i);
}

function fits(r: Rule, q: MatchQuery, path: string | undefined): boolean {
  if (r.methods !== null && (q.method === undefined || !r.methods.has(q.method))) return false;
  if (r.paths === null) return true;
  if (path === undefined) return false;
  return r.paths.some((p) => pathUnder(path, p));
}

const UNRESERVED_ESCAPE = /%(2[dDeE]|3\d|[46][1-9a-fA-F]|[57][0-9aA]|5[fF]|7[eE])/g;

/**
 * The path a rule's prefixes are matched against: the request's path as a site reads it, so that a
 * client cannot slip past a rule with `/./search`, `/x/../search` or `/%73earch` (sent as asked, read
 * by the site as `/search`): dot segments removed (RFC 3986 5.2.4, as WHATWG URL does) and escaped
 * unreserved characters decoded (RFC 3986 6.2.2.2). Its query is kept (a prefix may run into it).
 */
export function matchedPath(path: string): string {
  const q = path.indexOf('?');
  const bare = q === -1 ? path : path.slice(0, q);
  const plain = bare.includes('%') ? bare.replace(UNRESERVED_ESCAPE, (e) => decodeURIComponent(e)) : bare;
  if (!plain.includes('.') && plain === bare) return path;
  let normal: string;
  try {
    // Appended to an origin, not resolved against one: `//x/y` stays a path, never an authority.
    normal = new URL(`http://h${plain}`).pathname;
  } catch {
    return path;
  }
  return q === -1 ? normal : normal + path.slice(q);
}

/** `/a` covers `/a`, `/a/b` and `/a?x`, not `/ab`; a prefix ending in `/` covers what starts with it. */
export function pathUnder(path: string, prefix: string): boolean {
  if (!path.startsWith(prefix)) return false;
  if (path.length === prefix.length || prefix.endsWith('/')) return true;
  const next = path[prefix.length];
  return next === '/' || next === '?';
}

const setOf = (list: readonly string[] | undefined, f: (s: string) => string = (s) => s) =>
  list === undefined || list.length === 0 ? null : new Set(list.map(f));

function filterOf(p: RuleInput['proxies']): ProxyFilter | null {
  if (p === undefined) return null;
  const f = {
    tagsAny: setOf(p.tags_any),
    tagsNone: setOf(p.tags_none),
    countries: setOf(p.countries, (c) => c.toUpperCase()),
  };
  return f.tagsAny === null && f.tagsNone === null && f.countries === null ? null : f;
}

/** `N/second` or `N/minute` as the spacing between two requests, ms. */
export function intervalOf(rate: string): number {
  const [n, unit] = rate.split('/');
  return (unit === 'minute' ? 60_000 : 1_000) / Number(n);
}

function compileRule(r: RuleInput, index: number): Rule {
  return {
    name: r.name,
    index,
    paths: r.match.paths ?? null,
    methods: setOf(r.match.methods),
    filter: filterOf(r.proxies),
    strategy: r.strategy,
    ban: r.ban,
    retry: r.retry,
    maxInFlight: r.max_in_flight_per_proxy,
    minIntervalMs: r.min_interval_ms,
    hostIntervalMs: r.host_rate_limit === undefined ? undefined : intervalOf(r.host_rate_limit),
    session: r.session,
    inspect: r.inspect,
  };
}

/** Whether `tags` and `country` pass the rule's proxy filter. */
/** `country` true: the proxy serves any country asked of it (a gateway rendering `{country}`). */
export function passesFilter(
  f: ProxyFilter,
  tags: readonly string[],
  country: string | null | true,
): boolean {
  if (f.countries !== null && country !== true && (country === null || !f.countries.has(country)))
    return false;
  if (f.tagsAny !== null && !tags.some((t) => f.tagsAny?.has(t))) return false;
  if (f.tagsNone !== null && tags.some((t) => f.tagsNone?.has(t))) return false;
  return true;
}
