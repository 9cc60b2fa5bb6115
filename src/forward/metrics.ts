import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * What the listeners did, for `/metrics` (rota_forward_*) and `GET /api/v1/listeners`. Labels are bounded:
 * `listener` is one of three doors, `outcome` is `success` or one of the answers' codes (answers.ts).
 */
export type ListenerName = 'http' | 'connect' | 'socks5';

export interface ListenerTotals {
  requests: number;
  succeeded: number;
  refused: number;
  bytesUp: number;
  bytesDown: number;
  openTunnels: number;
}

function zero(): ListenerTotals {
  return { requests: 0, succeeded: 0, refused: 0, bytesUp: 0, bytesDown: 0, openTunnels: 0 };
}

export class ForwardMetrics {
  readonly #requests: Counter<'listener' | 'outcome'>;
  readonly #bytes: Counter<'listener' | 'direction'>;
  readonly #tunnels: Gauge<'listener'>;
  readonly totals: Record<ListenerName, ListenerTotals> = { http: zero(), connect: zero(), socks5: zero() };

  constructor(registry: Registry) {
    const registers = [registry];
    this.#requests = new Counter({
      name: 'rota_forward_requests_total',
      help: 'Requests and tunnels of the forward-proxy listeners, by listener and outcome',
      labelNames: ['listener', 'outcome'],
      registers,
    });
    this.#bytes = new Counter({
      name: 'rota_forward_bytes_total',
      help: 'Bytes relayed by the forward-proxy listeners, by listener and direction (up: to the target)',
      labelNames: ['listener', 'direction'],
      registers,
    });
    this.#tunnels = new Gauge({
      name: 'rota_forward_active_tunnels',
      help: 'Tunnels open now, by listener',
      labelNames: ['listener'],
      registers,
    });
    for (const l of ['http', 'connect', 'socks5'] as const) this.#tunnels.set({ listener: l }, 0);
  }

  /** One request or tunnel answered: `code` null for a success. */
  answered(listener: ListenerName, code: string | null): void {
    const t = this.totals[listener];
    t.requests++;
    if (code === null) t.succeeded++;
    else t.refused++;
    this.#requests.inc({ listener, outcome: code === null ? 'success' : code.toLowerCase() });
  }

  bytes(listener: ListenerName, up: number, down: number): void {
    const t = this.totals[listener];
    t.bytesUp += up;
    t.bytesDown += down;
    if (up > 0) this.#bytes.inc({ listener, direction: 'up' }, up);
    if (down > 0) this.#bytes.inc({ listener, direction: 'down' }, down);
  }

  tunnelOpened(listener: ListenerName): void {
    this.totals[listener].openTunnels++;
    this.#tunnels.inc({ listener });
  }

  tunnelClosed(listener: ListenerName): void {
    this.totals[listener].openTunnels--;
    this.#tunnels.dec({ listener });
  }
}
