import { isIP } from 'node:net';
import type { FastifyInstance } from 'fastify';
import ipaddr from 'ipaddr.js';
import type { Reader } from '../config-reader.ts';
import { sendError } from './envelope.ts';

/**
 * Cross-site control of the API. A web page the operator visits can send requests to a loopback API
 * (a `no-cors` POST reaches the handler even though the page never reads the answer), and a name the
 * attacker controls can be re-pointed at 127.0.0.1 (DNS rebinding). Two checks, before anything else
 * reads the request:
 * - the Host header must name an allowed host (ROTA_ALLOWED_HOSTS), else 421 MISDIRECTED_REQUEST;
 * - a state-changing request (not GET, HEAD, OPTIONS) whose Origin is neither the API's own origin
 *   nor a CORS origin gets 403 FORBIDDEN_ORIGIN; without Origin, `Sec-Fetch-Site: cross-site` or
 *   `same-site` is refused the same way.
 */

/** A host as named in a Host header or an allow-list entry: lowercase, no trailing dot; null port: none given. */
export interface HostName {
  readonly name: string;
  readonly port: number | null;
}

const DNS_NAME = /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*$/;
const PORT = /^:\d{1,5}$/;

/** `name[:port]` or `[v6][:port]`, case and one trailing dot ignored; null when it is not a host. */
export function parseHost(value: string): HostName | null {
  const v = value.toLowerCase();
  let name: string;
  let rest: string;
  if (v.startsWith('[')) {
    const end = v.indexOf(']');
    const inner = v.slice(1, end);
    if (end < 0 || isIP(inner) !== 6) return null;
    name = `[${ipaddr.IPv6.parse(inner).toString()}]`;
    rest = v.slice(end + 1);
  } else {
    const colon = v.indexOf(':');
    name = colon < 0 ? v : v.slice(0, colon);
    rest = colon < 0 ? '' : v.slice(colon);
    if (name.endsWith('.')) name = name.slice(0, -1);
    if (!DNS_NAME.test(name)) return null;
  }
  if (rest === '') return { name, port: null };
  if (!PORT.test(rest)) return null;
  const port = Number(rest.slice(1));
  return port <= 65535 ? { name, port } : null;
}

export function formatHost(h: HostName): string {
  return h.port === null ? h.name : `${h.name}:${h.port}`;
}

function isLoopbackName(name: string): boolean {
  if (name === 'localhost') return true;
  const ip = name.startsWith('[') ? name.slice(1, -1) : name;
  return isIP(ip) !== 0 && ipaddr.parse(ip).range() === 'loopback';
}

/** Without ROTA_ALLOWED_HOSTS: the loopback names when Rota listens on loopback, otherwise any host (`*`). */
export function defaultAllowedHosts(bound: string): string[] {
  const h = parseHost(isIP(bound) === 6 ? `[${bound}]` : bound);
  if (h === null || !isLoopbackName(h.name)) return ['*'];
  return [...new Set(['localhost', '127.0.0.1', '[::1]', h.name])];
}

/** ROTA_ALLOWED_HOSTS, each entry normalised, or the default for the bound address `bound` (ROTA_HOST). */
export function parseAllowedHosts(r: Reader, bound: string): string[] {
  const name = 'ROTA_ALLOWED_HOSTS';
  if (r.raw(name) === undefined) return defaultAllowedHosts(bound);
  const items = r.list(name);
  if (items.length === 0) r.problems.push(`${name}: expected at least one host, or * for any`);
  const out: string[] = [];
  for (const item of items) {
    const h = item === '*' ? null : parseHost(item);
    if (item === '*') out.push('*');
    else if (h !== null) out.push(formatHost(h));
    else
      r.problems.push(
        `${name}: ${JSON.stringify(item)} is not a host name or address with an optional :port ` +
          '(an IPv6 address in brackets)',
      );
  }
  return out;
}

const CACHE_LIMIT = 256;

/**
 * Decides whether a Host header names an allowed host. An entry without a port allows its name on any
 * port; `name:port` only a Host that names that port. A request without a Host header is allowed: a
 * browser always sends one. Decisions are kept per header value, a bounded number of them.
 */
export class HostCheck {
  private readonly any: boolean;
  private readonly entries: HostName[];
  private readonly seen = new Map<string, boolean>();

  constructor(allowed: readonly string[]) {
    this.any = allowed.includes('*');
    this.entries = allowed.map(parseHost).filter((h): h is HostName => h !== null);
  }

  allows(host: string | undefined): boolean {
    if (this.any || host === undefined) return true;
    let ok = this.seen.get(host);
    if (ok === undefined) {
      const h = parseHost(host);
      ok =
        h !== null && this.entries.some((e) => e.name === h.name && (e.port === null || e.port === h.port));
      if (this.seen.size >= CACHE_LIMIT) this.seen.clear();
      this.seen.set(host, ok);
    }
    return ok;
  }
}

const ORIGIN = /^(https?):\/\/([^/?#]+)$/i;

/**
 * True when `origin` is the API's own origin as reached through `host`: the same host and port, by
 * http or https (a TLS front end that keeps the Host header). A missing port is the scheme's default.
 */
export function isOwnOrigin(origin: string, host: string | undefined): boolean {
  const m = ORIGIN.exec(origin);
  if (m === null || host === undefined) return false;
  const o = parseHost(m[2]!);
  const h = parseHost(host);
  if (o === null || h === null || o.name !== h.name) return false;
  const def = m[1]!.toLowerCase() === 'https' ? 443 : 80;
  return (o.port ?? def) === (h.port ?? def);
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface WriteRequest {
  readonly method: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/**
 * True when a state-changing request comes from a foreign web page: its Origin is not the API's own
 * and not a CORS origin (`*` allows every origin but `null`), or, without Origin, the browser says
 * `Sec-Fetch-Site: cross-site` or `same-site`.
 */
export function isForeignWrite(req: WriteRequest, corsOrigins: () => readonly string[]): boolean {
  if (SAFE_METHODS.has(req.method)) return false;
  const origin = req.headers.origin;
  if (origin === undefined) {
    const site = req.headers['sec-fetch-site'];
    return site === 'cross-site' || site === 'same-site';
  }
  if (typeof origin !== 'string') return true;
  const host = req.headers.host;
  if (isOwnOrigin(origin, typeof host === 'string' ? host : undefined)) return false;
  const allowed = corsOrigins();
  return !allowed.includes(origin) && !(allowed.includes('*') && origin !== 'null');
}

export interface OriginGuardOptions {
  /** ROTA_ALLOWED_HOSTS as config.ts normalised it. */
  readonly allowedHosts: readonly string[];
  /** The CORS origins in force now (ROTA_CORS_ORIGINS, or what `PUT config` set since). */
  readonly corsOrigins: () => readonly string[];
}

/** The onRequest hook: before body parsing, rate limiting, auth and every handler. */
export function registerOriginGuard(app: FastifyInstance, opts: OriginGuardOptions): void {
  const hosts = new HostCheck(opts.allowedHosts);
  app.addHook('onRequest', (req, reply, done) => {
    if (!hosts.allows(req.headers.host)) {
      sendError(
        req,
        reply,
        421,
        'MISDIRECTED_REQUEST',
        'This server does not answer for the host the request names (ROTA_ALLOWED_HOSTS)',
      );
      return;
    }
    if (isForeignWrite(req, opts.corsOrigins)) {
      sendError(
        req,
        reply,
        403,
        'FORBIDDEN_ORIGIN',
        'A request that changes state from another web origin is refused (ROTA_CORS_ORIGINS allows one)',
      );
      return;
    }
    done();
  });
}
