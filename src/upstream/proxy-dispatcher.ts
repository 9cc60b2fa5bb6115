import type { Dispatcher } from 'undici';
import type { Agent, Pool } from '../runtime/undici-agent.ts';

/**
 * What Rota asks of one proxy's dispatcher (dispatchers.ts keeps one per proxy): send a request through
 * the proxy, say whether any is still running, and close every connection. Smaller than undici's
 * Dispatcher on purpose: a dispatcher for http:// proxies is two undici dispatchers behind one door
 * (absolute-form.ts), and nothing here needs undici's `request`, `stream` or `compose`.
 */
export interface ProxyDispatcher {
  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean;
  /** A request is running or waiting for a connection. */
  busy(): boolean;
  /** Ends every connection now; requests still running fail. */
  destroy(): Promise<void>;
}

interface OriginStats {
  readonly running?: number;
  readonly pending?: number;
  readonly queued?: number;
}

function active(s: OriginStats): boolean {
  return (s.running ?? 0) + (s.pending ?? 0) + (s.queued ?? 0) > 0;
}

/** Requests running or queued in an Agent (stats per origin) or a Pool (one stats object). */
export function agentBusy(agent: Agent): boolean {
  return Object.values(agent.stats as Record<string, OriginStats>).some(active);
}

export function poolBusy(pool: Pool): boolean {
  return active(pool.stats);
}

/** An Agent (one pool per target origin) as a ProxyDispatcher: the SOCKS proxies' dispatcher. */
export class AgentDispatcher implements ProxyDispatcher {
  readonly #agent: Agent;
  constructor(agent: Agent) {
    this.#agent = agent;
  }
  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    return this.#agent.dispatch(opts, handler);
  }
  busy(): boolean {
    return agentBusy(this.#agent);
  }
  destroy(): Promise<void> {
    return this.#agent.destroy();
  }
}
