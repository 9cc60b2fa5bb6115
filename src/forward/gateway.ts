import type { Duplex } from 'node:stream';
import { banHost, portOf } from '../bans/judge.ts';
import type { RuntimeSettings } from '../control/settings.ts';
import type { CallerSignal } from '../lib/abort.ts';
import type { CallResult, Executor } from '../outbound/executor.ts';
import type { Selector } from '../outbound/selector.ts';
import type { Work } from '../outbound/work.ts';
import { streamedWork, tunnelWork } from '../outbound/works.ts';
import type { SsrfGuard, SsrfVerdict } from '../ssrf/guard.ts';
import type { DispatcherCache } from '../upstream/dispatchers.ts';
import type { StreamedRequest, StreamedResponse } from '../upstream/stream.ts';
import type { TunnelTarget } from '../upstream/tunnel.ts';
import { type Refusal, refusal, refusalOf } from './answers.ts';
import type { ProxyParams } from './params.ts';

/**
 * What both listeners ask of the engine, after their own door (parsing, auth, parameters) is passed:
 *
 *   listener ──▶ SSRF rules (refused before any proxy is contacted)
 *            ──▶ Executor.execute(tunnelWork | streamedWork)   selection, failover, deadline, accounting
 *            ◀── an open tunnel / an answer's head, and the proxy that made it; or a Refusal
 */

export type Outcome<T> = { ok: true; value: T; proxyId: string } | { ok: false; refusal: Refusal };

export interface GatewayDeps {
  readonly executor: Executor;
  readonly selector: Selector;
  readonly dispatchers: DispatcherCache;
  readonly ssrf: SsrfGuard;
  readonly settings: RuntimeSettings;
}

function succeeded<R>(r: CallResult<R>): Outcome<R> {
  return { ok: true, value: r.response, proxyId: r.proxy.record.id };
}

function failed(err: unknown): Outcome<never> {
  return { ok: false, refusal: refusalOf(err) };
}

function refused(verdict: SsrfVerdict): Refusal | null {
  return verdict.ok ? null : refusal('SSRF_BLOCKED', `Target not allowed: ${verdict.message}`);
}

export class ForwardGateway {
  readonly #d: GatewayDeps;
  constructor(d: GatewayDeps) {
    this.#d = d;
  }

  /**
   * A target the SSRF rules refuse: 403 / SOCKS5 0x02 (null: allowed). Asked only when some proxy could
   * serve the call at all: a call bound for 503 anyway costs no DNS lookup. Decided without a promise
   * when no lookup is needed (a literal address, a name resolved moments ago): the common case.
   */
  #blocked(url: URL, params: ProxyParams): Refusal | null | Promise<Refusal | null> {
    if (!this.#d.selector.anyAdmissible(params.country)) return null;
    const known = this.#d.ssrf.checkKnown(url);
    if (known !== null) return refused(known);
    return this.#d.ssrf.check(url).then(refused);
  }

  /** Then `run`, unless the SSRF rules refuse `url`; no promise added when they decide at once. */
  #guarded<R>(url: URL, params: ProxyParams, run: () => Promise<Outcome<R>>): Promise<Outcome<R>> {
    const blocked = this.#blocked(url, params);
    if (blocked === null) return run();
    if (!(blocked instanceof Promise)) return Promise.resolve({ ok: false, refusal: blocked });
    return blocked.then((b) => (b === null ? run() : { ok: false, refusal: b }));
  }

  /** `origin`: the target's, parsed once per authority by the doors (connect.ts destinationOf; read only). */
  tunnel(
    target: TunnelTarget,
    params: ProxyParams,
    signal: CallerSignal,
    origin: URL,
  ): Promise<Outcome<Duplex>> {
    return this.#guarded(origin, params, () =>
      this.#run(tunnelWork(this.#d.dispatchers, target), params, signal, banHost(target), target.port),
    );
  }

  request(
    /** Its origin is the one the door parsed (forward/target.ts), read only. */
    r: StreamedRequest,
    params: ProxyParams,
    signal: CallerSignal,
  ): Promise<Outcome<StreamedResponse>> {
    return this.#guarded(r.origin, params, () =>
      this.#run(streamedWork(this.#d.dispatchers, r), params, signal, banHost(r.origin), portOf(r.origin)),
    );
  }

  #run<R>(
    work: Work<R>,
    params: ProxyParams,
    signal: CallerSignal,
    host: string,
    port: number,
  ): Promise<Outcome<R>> {
    const call = this.#d.executor.execute<R>({
      work,
      timeoutS: this.#d.settings.get().timeout,
      sessionId: params.sessionId,
      onlyCountry: params.country,
      host,
      port,
      signal,
    });
    // then() with two functions that capture nothing, rather than an async function: one promise less
    // and no frame kept per call on the listeners' hottest path.
    return call.then(succeeded, failed);
  }
}
