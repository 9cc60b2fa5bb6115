import type { FastifyInstance } from 'fastify';
import { type HostName, parseHost } from '../lib/allowed-hosts.ts';
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
        'MISDIRECTED_REQUEST',
        'This server does not answer for the host the request names (ROTA_ALLOWED_HOSTS)',
      );
      return;
    }
    if (isForeignWrite(req, opts.corsOrigins)) {
      sendError(
        req,
        reply,
        'FORBIDDEN_ORIGIN',
        'A request that changes state from another web origin is refused (ROTA_CORS_ORIGINS allows one)',
      );
      return;
    }
    done();
  });
}
