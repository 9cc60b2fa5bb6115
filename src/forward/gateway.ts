import type { Duplex } from 'node:stream';
import type tls from 'node:tls';
import { banHost } from '../bans/judge.ts';
import { RotaError } from '../errors/rota-error.ts';
import type { CallerSignal } from '../lib/abort.ts';
import type { CallResult, Executor } from '../outbound/executor.ts';
import type { CallPrelude, Prepared } from '../outbound/prelude.ts';
import { streamedWork, tunnelWork } from '../outbound/works.ts';
import type { DispatcherCache } from '../upstream/dispatchers.ts';
import type { StreamedRequest, StreamedResponse } from '../upstream/stream.ts';
import type { TunnelTarget } from '../upstream/tunnel.ts';
import { type Refusal, refusalOf } from './answers.ts';
import type { ProxyParams } from './params.ts';

/**
 * What both listeners ask of the engine, after their own door (parsing, auth, parameters) is passed:
 *
 *   listener ──▶ CallPrelude (outbound/prelude.ts): SSRF rules, timeout, host for bans; refused before
 *            │   any proxy is contacted
 *            ──▶ Executor.execute(tunnelWork | streamedWork)   selection, failover, deadline, accounting
 *            ◀── an open tunnel / an answer's head, and the proxy that made it; or a Refusal
 */

/** What a door tells its client of a call (X-Rota-Proxy-Id, X-Rota-Attempts, X-Rota-Session, X-Rota-Policy). */
export interface Told {
  readonly proxyId: string;
  readonly attempts: number;
  readonly session: string | undefined;
  readonly policy: string | undefined;
  /** The call's, for ForwardGateway.ended() once its answer body or tunnel is over. */
  readonly callId?: number | undefined;
}

export type Outcome<T> = ({ ok: true; value: T } & Told) | { ok: false; refusal: Refusal };

export interface GatewayDeps {
  readonly executor: Executor;
  readonly prelude: CallPrelude;
  readonly dispatchers: DispatcherCache;
}

function succeeded<R>(r: CallResult<R>): Outcome<R> {
  const { attempts, session, rule: policy } = r;
  const callId = r.callId;
  return { ok: true, value: r.response, proxyId: r.proxy.record.id, attempts, session, policy, callId };
}

function failed(err: unknown): Outcome<never> {
  return { ok: false, refusal: refusalOf(err) };
}

export class ForwardGateway {
  readonly #d: GatewayDeps;
  constructor(d: GatewayDeps) {
    this.#d = d;
  }

  /** `origin`: the target's, parsed once per authority by the doors (connect.ts destinationOf; read only). */
  tunnel(
    target: TunnelTarget,
    params: ProxyParams,
    signal: CallerSignal,
    origin: URL,
    door: 'connect' | 'socks5' | 'inspect',
  ): Promise<Outcome<Duplex>> {
    const work = () => tunnelWork(this.#d.dispatchers, target);
    const { sessionId, country } = params;
    const host = banHost(target);
    const port = target.port;
    return this.#run(
      this.#d.prelude.prepare({
        target: origin,
        work,
        host,
        port,
        sessionId,
        onlyCountry: country,
        signal,
        door,
      }),
    );
  }

  /** The call behind `out` is over: its bytes each way (the request log's record). */
  ended(out: { readonly callId?: number | undefined }, up: number, down: number): void {
    this.#d.executor.ended(out.callId, up, down);
  }

  /** TLS with the target over a tunnel from tunnel(), verified as the engine verifies every target. */
  targetTls(tunnel: Duplex, target: TunnelTarget): Promise<tls.TLSSocket> {
    return this.#d.dispatchers.targetTls(tunnel, target);
  }

  request(
    /** Its origin is the one the door parsed (forward/target.ts), read only. */
    r: StreamedRequest,
    params: ProxyParams,
    signal: CallerSignal,
    door: 'http' | 'inspect',
  ): Promise<Outcome<StreamedResponse>> {
    const work = () => streamedWork(this.#d.dispatchers, r);
    const { sessionId, country } = params;
    const scheme = door === 'inspect' ? 'https' : 'http';
    return this.#run(
      this.#d.prelude.prepare({
        target: r.origin,
        work,
        sessionId,
        onlyCountry: country,
        signal,
        door,
        scheme,
        path: r.path,
      }),
    );
  }

  /** No promise added when the prelude decided at once (the common case). */
  #run<R>(p: Prepared<R> | Promise<Prepared<R>>): Promise<Outcome<R>> {
    return p instanceof Promise ? p.then((q) => this.#execute(q)) : this.#execute(p);
  }

  #execute<R>(p: Prepared<R>): Promise<Outcome<R>> {
    if (p instanceof RotaError) return Promise.resolve(failed(p));
    // then() with two functions that capture nothing, rather than an async function: one promise less
    // and no frame kept per call on the listeners' hottest path.
    return this.#d.executor.execute<R>(p).then(succeeded, failed);
  }
}
