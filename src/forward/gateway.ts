import type { Duplex, Readable } from 'node:stream';
import { banHost } from '../bans/judge.ts';
import type { RuntimeSettings } from '../control/settings.ts';
import type { Executor } from '../outbound/executor.ts';
import type { Selector } from '../outbound/selector.ts';
import type { Work } from '../outbound/work.ts';
import { streamedWork, tunnelWork } from '../outbound/works.ts';
import type { SsrfGuard } from '../ssrf/guard.ts';
import { authority } from '../upstream/dial.ts';
import type { DispatcherCache } from '../upstream/dispatchers.ts';
import type { StreamedResponse } from '../upstream/stream.ts';
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
  readonly idleTimeoutMs: number;
}

export interface ForwardedRequest {
  /** The target's origin, parsed (forward/target.ts); read only. */
  readonly origin: URL;
  /** Path and query as the client sent them. */
  readonly path: string;
  readonly method: string;
  readonly headers: Record<string, string | string[]>;
  readonly body: Readable | null;
  readonly onBodyBytes?: (n: number) => void;
}

export class ForwardGateway {
  readonly #d: GatewayDeps;
  constructor(d: GatewayDeps) {
    this.#d = d;
  }

  /**
   * A target the SSRF rules refuse: 403 / SOCKS5 0x02 (null: allowed). Asked only when some proxy could
   * serve the call at all: a call bound for 503 anyway costs no DNS lookup.
   */
  async #blocked(url: URL, params: ProxyParams): Promise<Refusal | null> {
    if (!this.#d.selector.hasCandidate({ onlyCountry: params.country })) return null;
    const verdict = await this.#d.ssrf.check(url);
    return verdict.ok ? null : refusal('SSRF_BLOCKED', `Target not allowed: ${verdict.message}`);
  }

  async tunnel(target: TunnelTarget, params: ProxyParams, signal: AbortSignal): Promise<Outcome<Duplex>> {
    const blocked = await this.#blocked(
      new URL(`http://${authority(target.hostname, target.port)}/`),
      params,
    );
    if (blocked) return { ok: false, refusal: blocked };
    return this.#run(tunnelWork(this.#d.dispatchers, target), params, signal, banHost(target));
  }

  async request(
    r: ForwardedRequest,
    params: ProxyParams,
    signal: AbortSignal,
  ): Promise<Outcome<StreamedResponse>> {
    const blocked = await this.#blocked(r.origin, params);
    if (blocked) return { ok: false, refusal: blocked };
    const hasBody = r.body !== null;
    const work = streamedWork(this.#d.dispatchers, { ...r, idleTimeoutMs: this.#d.idleTimeoutMs }, hasBody);
    return this.#run(work, params, signal, banHost(r.origin));
  }

  async #run<R>(work: Work<R>, params: ProxyParams, signal: AbortSignal, host: string): Promise<Outcome<R>> {
    try {
      const r = await this.#d.executor.execute<R>({
        work,
        timeoutS: this.#d.settings.get().timeout,
        sessionId: params.sessionId,
        onlyCountry: params.country,
        host,
        signal,
      });
      return { ok: true, value: r.response, proxyId: r.proxy.record.id };
    } catch (err) {
      return { ok: false, refusal: refusalOf(err) };
    }
  }
}
