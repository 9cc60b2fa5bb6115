import { createHash, randomBytes } from 'node:crypto';
import type { ExitOf } from '../bans/report.ts';
import type { Pool } from '../pool/pool.ts';
import { isGateway, type ProxyRecord, servesAnyCountry } from '../pool/types.ts';
import type { CallPrelude } from './prelude.ts';

/**
 * Provider gateways: one pool entry (`gw.provider.example:7777`) whose provider picks the exit address by
 * the username it is sent (`customer-acme-session-{session}-country-{country}`). Per attempt the engine
 * renders the entry's templates into the credentials it dials with:
 *
 *   {session}  the provider session: derived from the call's Rota session (its table key) and the
 *              gateway, so every instance renders the same one; a fresh one per attempt for a call with
 *              no session (a new exit per request)
 *   {country}  the call's country, else the entry's, lower case ({COUNTRY}: upper case); empty if none
 *   {rand}     random per attempt
 *
 * A ban is a verdict on an exit, so for a gateway it is kept per (gateway, provider session, host): the
 * gateway stays eligible, and a ban moves the call, or re-pins a session, to the next provider session
 * (a new generation of the derivation), never to another pool entry. Breakers and health stay the
 * gateway's. A rendered username is a credential: it goes into the dial record and nowhere else.
 */

export { isGateway, servesAnyCountry };

/** What one attempt through a gateway dials with, and the key its bans are kept under. */
export interface Rendered {
  readonly record: ProxyRecord;
  /**
   * `${gateway id}#${provider session}`: the cool-down table's proxy for this exit; null for a call with no
   * session, whose provider session is used once (a ban is seen and moves the call, nothing is cooled:
   * a key nobody asks for again would only take a place in the table).
   */
  readonly banKey: string | null;
}

const PLACEHOLDER = /\{(session|country|COUNTRY|rand)\}/g;
const MAX_GENERATIONS = 100_000;

export function renderTemplate(
  template: string,
  v: { readonly session: string; readonly country: string | null; readonly rand: string },
): string {
  return template.replace(PLACEHOLDER, (_, name: string) => {
    if (name === 'session') return v.session;
    if (name === 'rand') return v.rand;
    const c = v.country ?? '';
    return name === 'COUNTRY' ? c.toUpperCase() : c.toLowerCase();
  });
}

/**
 * The provider sessions of Rota sessions: a generation per (session key, gateway), moved on by a ban, told
 * to the other instances (shared state) so that they render the next provider session too.
 */
export class ProviderSessions {
  readonly #gen = new Map<string, number>();
  /** Told of every generation moved here. */
  onBump: ((key: string, gen: number) => void) | null = null;

  /** The provider session for a call of `sessionKey` (none: a fresh one) through `gatewayId`. */
  id(sessionKey: string | undefined, gatewayId: string): string {
    if (sessionKey === undefined || sessionKey === '') return randomBytes(8).toString('hex');
    const key = `${sessionKey}\n${gatewayId}`;
    const gen = this.#gen.get(key);
    // Used: to the back of the eviction order, so a busy session's moved generation outlives idle ones.
    if (gen !== undefined) {
      this.#gen.delete(key);
      this.#gen.set(key, gen);
    }
    return createHash('sha256')
      .update(`${key}\n${gen ?? 0}`)
      .digest('hex')
      .slice(0, 16);
  }

  /** The exit of this session through this gateway was banned: its next attempt takes the next one. */
  bump(sessionKey: string | undefined, gatewayId: string): void {
    if (sessionKey === undefined || sessionKey === '') return;
    const key = `${sessionKey}\n${gatewayId}`;
    const gen = (this.#gen.get(key) ?? 0) + 1;
    this.#set(key, gen);
    this.onBump?.(key, gen);
  }

  /** Another instance moved a generation (shared state): the later one wins. */
  applyRemote(key: string, gen: number): void {
    if (gen > (this.#gen.get(key) ?? 0)) this.#set(key, gen);
  }

  #set(key: string, gen: number): void {
    this.#gen.delete(key);
    this.#gen.set(key, gen);
    if (this.#gen.size > MAX_GENERATIONS) {
      const oldest = this.#gen.keys().next();
      if (!oldest.done) this.#gen.delete(oldest.value);
    }
  }
}

/**
 * The credentials of one attempt through gateway `r` for a call of `sessionKey` (none: a fresh provider
 * session) and `country` (the call's, else the entry's effective one).
 */
export function render(
  sessions: ProviderSessions | null,
  r: ProxyRecord,
  sessionKey: string | undefined,
  country: string | null,
): Rendered {
  const session = sessions === null ? randomBytes(8).toString('hex') : sessions.id(sessionKey, r.id);
  // Drawn only for a template that asks for it (most do not): an attempt through a gateway is hot.
  const asksRand =
    r.usernameTemplate?.includes('{rand}') === true || r.passwordTemplate?.includes('{rand}') === true;
  const v = { session, country, rand: asksRand ? randomBytes(6).toString('hex') : '' };
  const username = r.usernameTemplate ? renderTemplate(r.usernameTemplate, v) : r.username;
  const password = r.passwordTemplate ? renderTemplate(r.passwordTemplate, v) : r.password;
  const kept = sessions !== null && sessionKey !== undefined && sessionKey !== '';
  return { record: { ...r, username, password }, banKey: kept ? `${r.id}#${session}` : null };
}

/**
 * The exit a client's ban report through a gateway is about (POST bans, bans/report.ts): the provider
 * session its session renders for that host now (keyed as the call's, a rule's `scope: host` included),
 * which cools, and which the session then leaves for the next one.
 */
export function reportedExit(d: {
  readonly pool: Pool;
  readonly prelude: CallPrelude;
  readonly sessions: ProviderSessions;
}): ExitOf {
  return (proxyId, host, sessionId) => {
    const e = d.pool.get(proxyId);
    if (e === undefined || !isGateway(e.record)) return null;
    if (sessionId === undefined) return { key: null, move: () => {} };
    // The rule a tunnel to the host gets (a ban seen inside a tunnel: no path, CONNECT), as its call had.
    const { key } = d.prelude.sessionOf(sessionId, host, d.prelude.ruleFor({ host, method: 'CONNECT' }));
    return { key: `${proxyId}#${d.sessions.id(key, proxyId)}`, move: () => d.sessions.bump(key, proxyId) };
  };
}
