import { banHost, portOf } from '../bans/judge.ts';
import type { RuntimeSettings } from '../control/settings.ts';
import { RotaError } from '../errors/rota-error.ts';
import { type CallerSignal, delay } from '../lib/abort.ts';
import type { Door } from '../metrics/calls.ts';
import type { SessionDefaultsMs } from '../policies/index.ts';
import type { HostPacer } from '../policies/pace.ts';
import type { MatchQuery, Rule, RuleBook } from '../policies/rulebook.ts';
import { hostKey, type SessionTerms } from '../rotation/sessions.ts';
import type { SsrfGuard, SsrfVerdict } from '../ssrf/guard.ts';
import type { CallInput, CallSession } from './call.ts';
import { hostRateLimited } from './call-error.ts';
import type { Selector } from './selector.ts';
import type { Work } from './work.ts';

/**
 * The one call prelude every door runs before the engine: it takes what the door parsed and returns the
 * engine's input, or Rota's error. No door checks SSRF, resolves the timeout or names the host for bans
 * itself, so every door (POST request, absolute-URI, CONNECT, SOCKS5, and those to come) applies the same
 * rules the same way.
 *
 *   door ──▶ DoorCall { target, work, session, country, timeout, signal }
 *              │ SSRF verdict (at once when known; a DNS lookup only when some proxy could serve)
 *              │ timeout (the client's, else the runtime setting) · host and port (bans, refusals)
 *              │ policy: the first rule whose match fits (host, path, method) (policies/rulebook.ts);
 *              │   its host_rate_limit waits here, within the timeout, or refuses (429)
 *              │ session: the rule's terms over ROTA_SESSION_*; `scope: host` keys the pin by host
 *              ▼
 *          CallInput { …, rule, session } ──▶ Executor.execute     or   RotaError ──▶ the door renders it
 *
 * A call no rule matches costs one size check (no rules) or one cached host lookup.
 */

export interface DoorCall<R> {
  /** The target: its whole URL (POST request, absolute-URI), or its origin (a tunnel). */
  readonly target: URL;
  /** What each attempt does, given the URL the SSRF rules checked (the one that goes out). */
  readonly work: (checked: URL) => Work<R>;
  /** A tunnel's host and port as asked (an IPv6 address without brackets); otherwise the target's. */
  readonly host?: string;
  readonly port?: number;
  /** The client's timeout, seconds; none: the runtime setting. */
  readonly timeoutS?: number | undefined;
  readonly sessionId?: string | undefined;
  /** geo-targeted's preference. */
  readonly country?: string | undefined;
  /** A hard filter: only proxies of this country. */
  readonly onlyCountry?: string | undefined;
  readonly signal?: CallerSignal;
  /** Where the call came in and what it asked, for the request log (its query is never shown). */
  readonly door?: Door;
  readonly scheme?: 'http' | 'https';
  readonly path?: string;
}

/** The engine's input, or why there is none. */
export type Prepared<R> = CallInput<R> | RotaError;

export interface PreludeDeps {
  readonly ssrf: SsrfGuard;
  readonly settings: RuntimeSettings;
  readonly selector: Selector;
  /** The policy list in use, compiled (policies/holder.ts). */
  readonly policies: () => RuleBook;
  readonly pacer: HostPacer;
  /** Session terms where no rule sets them. */
  readonly sessions: SessionDefaultsMs;
  readonly monotonic: () => number;
  /** The retry policy's `timeout` (seconds; null: none), which caps every call's budget. */
  readonly retryTimeoutS?: () => number | null;
  /** Per-rule counters (metrics): a call matched `rule`, or its host_rate_limit refused it. */
  readonly onRule?: ((rule: string, event: 'request' | 'rate_limited') => void) | undefined;
}

export class CallPrelude {
  readonly #d: PreludeDeps;
  constructor(d: PreludeDeps) {
    this.#d = d;
  }

  /** Decided without a promise when the SSRF rules need no lookup (a literal address, a name seen lately). */
  prepare<R>(c: DoorCall<R>): Prepared<R> | Promise<Prepared<R>> {
    const known = this.#d.ssrf.checkKnown(c.target);
    if (known !== null) return this.#after(c, known);
    // A call no proxy could serve ends in 503 whatever its target: it costs no DNS lookup. It must not
    // wait for a host_rate_limit start either: a proxy usable by then would carry a target never checked.
    if (!this.#d.selector.anyAdmissible(c.onlyCountry)) return this.#input(c, c.target, false);
    return this.#d.ssrf.check(c.target).then((v) => this.#after(c, v));
  }

  /**
   * The SSRF rules alone, for a door that answers before any call is made (an inspected tunnel, whose
   * requests each run prepare() later): null when `target` is allowed, else Rota's error.
   */
  forbidden(target: URL): RotaError | null | Promise<RotaError | null> {
    const known = this.#d.ssrf.checkKnown(target);
    if (known !== null) return forbiddenBy(known);
    return this.#d.ssrf.check(target).then(forbiddenBy);
  }

  /** The policy rule a call to this host (path, method) gets; null: none, the global settings alone. */
  ruleFor(q: MatchQuery): Rule | null {
    const book = this.#d.policies();
    return book.size === 0 ? null : book.match(q);
  }

  #after<R>(c: DoorCall<R>, v: SsrfVerdict): Prepared<R> | Promise<Prepared<R>> {
    if (!v.ok) return forbiddenBy(v) as RotaError;
    // The guard's normalised URL: the one it checked is the one that goes out (the same object when it
    // is the same, which it is but for tricks the guard normalised away).
    return this.#input(c, v.url === c.target.href ? c.target : new URL(v.url));
  }

  /** `pace` false: the target is unchecked (no proxy could serve it): never wait, whatever the rule. */
  #input<R>(c: DoorCall<R>, checked: URL, pace = true): Prepared<R> | Promise<Prepared<R>> {
    const host = c.host ?? banHost(checked);
    const work = c.work(checked);
    const input: CallInput<R> = {
      work,
      timeoutS: c.timeoutS ?? this.#d.settings.get().timeout,
      sessionId: c.sessionId,
      country: c.country,
      onlyCountry: c.onlyCountry,
      host,
      port: c.port ?? portOf(checked),
      signal: c.signal,
      door: c.door,
      scheme: c.scheme,
      path: c.path,
    };
    const rule = this.ruleFor({ host, path: c.path, method: work.method });
    if (rule !== null) {
      input.rule = rule;
      this.#d.onRule?.(rule.name, 'request');
    }
    if (c.sessionId !== undefined && c.sessionId !== '') this.#session(input, c.sessionId, host, rule);
    if (rule?.hostIntervalMs === undefined || !pace) return input;
    return this.#paced(input, rule, host, rule.hostIntervalMs);
  }

  /** The call's session: the rule's terms over the defaults; a `scope: host` pin is keyed by the host. */
  #session(input: CallInput<unknown>, id: string, host: string, rule: Rule | null): void {
    const { session, key } = this.sessionOf(id, host, rule);
    input.session = session;
    input.sessionId = key;
  }

  /** Session `id` of a call to `host` under `rule`: its terms, and the key its pin is kept under. */
  sessionOf(id: string, host: string, rule: Rule | null): { session: CallSession; key: string } {
    const d = this.#d.sessions;
    const t = rule?.session;
    const scope = t?.scope ?? d.scope;
    const terms: SessionTerms =
      t === undefined
        ? d.terms
        : {
            idleMs: t.idle_ttl_s === undefined ? d.terms.idleMs : t.idle_ttl_s * 1000,
            maxMs: t.max_ttl_s === undefined ? d.terms.maxMs : t.max_ttl_s * 1000,
            maxRequests: t.max_requests ?? d.terms.maxRequests,
          };
    const keepOnBan = t?.on_ban === undefined ? d.keepOnBan : t.on_ban === 'keep';
    const session: CallSession = { id, host: scope === 'host' ? host : null, terms, keepOnBan };
    return { session, key: scope === 'host' ? hostKey(id, host) : id };
  }

  /** The rule's host_rate_limit: the next free start within the call's timeout, else 429. */
  #paced<R>(
    input: CallInput<R>,
    rule: Rule,
    host: string,
    intervalMs: number,
  ): Prepared<R> | Promise<Prepared<R>> {
    // The call's whole budget, as the engine will count it: the retry policy's timeout caps the client's.
    const budgetMs = Math.min(input.timeoutS, this.#d.retryTimeoutS?.() ?? Number.POSITIVE_INFINITY) * 1000;
    // The call needs some of its timeout left once it may start: a start at the very end would time out.
    const r = this.#d.pacer.reserve(`${rule.name}\n${host}`, intervalMs, this.#d.monotonic(), budgetMs * 0.9);
    if (!r.ok) {
      this.#d.onRule?.(rule.name, 'rate_limited');
      return hostRateLimited(rule.name, r.retryAfterMs, 'host_rate_limit');
    }
    if (r.waitMs <= 0) return input;
    input.timeoutS = (budgetMs - r.waitMs) / 1000;
    // A caller gone while it waits gives its start back (it must not hold the host's schedule) and goes
    // no further: no pick, so no session count, re-pin or proxy start for a request never sent.
    return delay(r.waitMs, input.signal).then((waited) => {
      if (waited) return input;
      this.#d.pacer.release(r.slot);
      return new RotaError('REQUEST_FAILED', 'The request was aborted', {
        details: { reason: 'client_gone' },
      });
    });
  }
}

function forbiddenBy(v: SsrfVerdict): RotaError | null {
  if (v.ok) return null;
  return new RotaError('TARGET_FORBIDDEN', `Target not allowed: ${v.message}`, {
    details: { reason: v.reason },
  });
}
