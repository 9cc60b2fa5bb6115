import { banHost, portOf } from '../bans/judge.ts';
import type { RuntimeSettings } from '../control/settings.ts';
import { RotaError } from '../errors/rota-error.ts';
import type { CallerSignal } from '../lib/abort.ts';
import type { Door } from '../metrics/calls.ts';
import type { SsrfGuard, SsrfVerdict } from '../ssrf/guard.ts';
import type { CallInput } from './call.ts';
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
 *              ▼
 *          CallInput ──▶ Executor.execute          or   RotaError TARGET_FORBIDDEN ──▶ the door renders it
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
    // A call no proxy could serve ends in 503 whatever its target: it costs no DNS lookup.
    if (!this.#d.selector.anyAdmissible(c.onlyCountry)) return this.#input(c, c.target);
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

  #after<R>(c: DoorCall<R>, v: SsrfVerdict): Prepared<R> {
    if (!v.ok) return forbiddenBy(v) as RotaError;
    // The guard's normalised URL: the one it checked is the one that goes out (the same object when it
    // is the same, which it is but for tricks the guard normalised away).
    return this.#input(c, v.url === c.target.href ? c.target : new URL(v.url));
  }

  #input<R>(c: DoorCall<R>, checked: URL): CallInput<R> {
    return {
      work: c.work(checked),
      timeoutS: c.timeoutS ?? this.#d.settings.get().timeout,
      sessionId: c.sessionId,
      country: c.country,
      onlyCountry: c.onlyCountry,
      host: c.host ?? banHost(checked),
      port: c.port ?? portOf(checked),
      signal: c.signal,
      door: c.door,
      scheme: c.scheme,
      path: c.path,
    };
  }
}

function forbiddenBy(v: SsrfVerdict): RotaError | null {
  if (v.ok) return null;
  return new RotaError('TARGET_FORBIDDEN', `Target not allowed: ${v.message}`, {
    details: { reason: v.reason },
  });
}
