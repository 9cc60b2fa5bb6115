import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { AuditLog } from '../audit/audit.ts';
import { defaultLimitKey, ipBucket } from '../http/rate-limit.ts';
import type { Rate } from '../lib/rate.ts';
import type { RateCounter } from '../lib/rate-counter.ts';

/**
 * Who may use the listeners (DECISIONS wave 2): with ROTA_REQUIRE_AUTH the API key is the proxy
 * password, whatever the username (which carries the session and country parameters). Every refusal is
 * audit-logged and counted against the client IP's default rate limit, in the same counter as the
 * API's, so a key cannot be guessed through a listener faster than through the API; once the IP is past
 * its limit the listener refuses its attempts at once, right or wrong key alike.
 */
export type Verdict = { type: 'ok' } | { type: 'refused' } | { type: 'limited'; retryAfterS: number };

export interface ListenerAuthDeps {
  readonly requireAuth: boolean;
  readonly apiKey: string | null;
  readonly counter: RateCounter;
  /** The default limit, read per check (`PUT config` changes it at runtime). */
  readonly rate: () => Rate;
  readonly audit: AuditLog;
}

export interface Presented {
  readonly listener: 'http' | 'socks5';
  /**
   * The client's address, asked only when auth is on: reading a socket's remoteAddress is a
   * getpeername(2) per connection (~8 µs of every tunnel in a --cpu-prof, with auth off for nothing).
   */
  readonly clientIp: () => string;
  /** What was asked for, for the audit line: `CONNECT`, `GET`, ..., or `SOCKS5`. */
  readonly method: string;
  /** null: no credentials offered. */
  readonly password: string | null;
}

function digest(b: Buffer): Buffer {
  return createHash('sha256').update(b).digest();
}

const OK: Verdict = Object.freeze({ type: 'ok' });

export class ListenerAuth {
  readonly #d: ListenerAuthDeps;
  readonly #expected: Buffer | null;

  constructor(d: ListenerAuthDeps) {
    this.#d = d;
    this.#expected = d.apiKey ? digest(Buffer.from(d.apiKey, 'utf8')) : null;
  }

  get required(): boolean {
    return this.#d.requireAuth;
  }

  /** With auth off, the verdict at once (no promise): every listener call asks. */
  check(p: Presented): Verdict | Promise<Verdict> {
    if (!this.#d.requireAuth) return OK;
    return this.#check(p);
  }

  async #check(p: Presented): Promise<Verdict> {
    const rate = this.#d.rate();
    const key = defaultLimitKey(`ip:${ipBucket(p.clientIp())}`);
    const seen = await this.#d.counter.peek(key, rate.windowMs);
    // Not audit-logged: the refusals that led here were, and a flood must not become a flood of lines.
    if (seen.count >= rate.limit) {
      return { type: 'limited', retryAfterS: Math.max(1, Math.ceil(seen.ttlMs / 1000)) };
    }
    // Compared as SHA-256 digests: constant time whatever the length of what was sent.
    const given = p.password === null ? null : digest(Buffer.from(p.password, 'utf8'));
    if (given !== null && this.#expected !== null && timingSafeEqual(given, this.#expected)) {
      return { type: 'ok' };
    }
    await this.#d.counter.incr(key, rate.windowMs);
    this.#audit(p, 407, 'denied');
    return { type: 'refused' };
  }

  #audit(p: Presented, status: number, outcome: 'denied'): void {
    this.#d.audit.record({
      action: 'listener.auth_failed',
      request_id: randomUUID(),
      client_ip: p.clientIp(),
      method: p.method,
      route: `listener:${p.listener}`,
      status,
      outcome,
    });
  }
}

/** `Proxy-Authorization: Basic base64(user:pass)` → its parts; null when absent or not Basic. */
export function basicCredentials(header: string | undefined): { username: string; password: string } | null {
  if (header === undefined) return null;
  const m = /^Basic[ \t]+([A-Za-z0-9+/=]+)[ \t]*$/i.exec(header);
  if (!m?.[1]) return null;
  const text = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon === -1) return null;
  return { username: text.slice(0, colon), password: text.slice(colon + 1) };
}
