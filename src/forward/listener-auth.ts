import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { AuditLog } from '../audit/audit.ts';
import type { AuthFailureBudget, BudgetVerdict } from '../auth/budget.ts';

/**
 * Who may use the listeners: with ROTA_REQUIRE_AUTH the API key is the proxy password, whatever the
 * username (which carries the session and country parameters). A presented password is answered within
 * the client IP's failed-auth budget (http/auth-budget.ts), the same budget as the API's: a wrong one
 * takes a unit and is audit-logged, and once the budget is spent every presented password, right or
 * wrong, is refused at once (`limited`), so a key cannot be guessed through a listener faster than
 * through the API. No credentials at all are refused (the 407 challenge) without charge or audit line:
 * they cannot be right, and clients that wait for the challenge send them before every keyed attempt.
 */
export type Verdict = { type: 'ok' } | { type: 'refused' } | { type: 'limited'; retryAfterS: number };

export interface ListenerAuthDeps {
  readonly requireAuth: boolean;
  readonly apiKey: string | null;
  readonly budget: AuthFailureBudget;
  readonly audit: AuditLog;
  /**
   * ROTA_PROXY_CHALLENGE: with auth off, the HTTP listener still answers 407 to a request without
   * credentials (and then takes any), so that browsers, which send proxy credentials only after a 407,
   * pass their username and its session and country parameters.
   */
  readonly challenge?: boolean | undefined;
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
const REFUSED: Verdict = Object.freeze({ type: 'refused' });

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

  /** Whether the HTTP listener challenges a request without credentials although auth is off. */
  get challenges(): boolean {
    return this.#d.challenge === true && !this.#d.requireAuth;
  }

  /** With auth off, the verdict at once (no promise): every listener call asks. */
  check(p: Presented): Verdict | Promise<Verdict> {
    if (!this.#d.requireAuth) {
      return p.password === null && p.listener === 'http' && this.challenges ? REFUSED : OK;
    }
    return this.#check(p);
  }

  #check(p: Presented): Verdict | Promise<Verdict> {
    // No credentials: the challenge every client that waits for one gets first, not a failed attempt.
    if (p.password === null) return REFUSED;
    // Compared as SHA-256 digests: constant time whatever the length of what was sent. The result is
    // told to the client only within the budget.
    const given = digest(Buffer.from(p.password, 'utf8'));
    const right = this.#expected !== null && timingSafeEqual(given, this.#expected);
    const charged = this.#d.budget.charge(p.clientIp(), !right);
    return charged instanceof Promise
      ? charged.then((b) => this.#decide(p, right, b))
      : this.#decide(p, right, charged);
  }

  #decide(p: Presented, right: boolean, b: BudgetVerdict): Verdict {
    // Not audit-logged: the refusals that spent the budget were, and a flood must not become a flood of lines.
    if (b.type === 'limited') return b;
    if (right) return OK;
    this.#audit(p);
    return REFUSED;
  }

  #audit(p: Presented): void {
    this.#d.audit.record({
      action: 'listener.auth_failed',
      request_id: randomUUID(),
      client_ip: p.clientIp(),
      method: p.method,
      route: `listener:${p.listener}`,
      status: 407,
      outcome: 'denied',
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
