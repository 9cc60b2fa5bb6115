import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * What the listeners did, for `/metrics` (rota_forward_*) and `GET /api/v1/listeners`. Labels are bounded:
 * `listener` is one of four doors (`inspect`: the requests inside an inspected HTTPS connection),
 * `outcome` is `success` or one of the answers' codes (answers.ts).
 */
export type ListenerName = 'http' | 'connect' | 'socks5' | 'inspect';

/** How the TLS handshake of an inspected connection ended (forward/inspect.ts). */
export type HandshakeResult = 'ok' | 'client_refused' | 'not_tls' | 'leaf_budget';
const HANDSHAKE_RESULTS: readonly HandshakeResult[] = ['ok', 'client_refused', 'not_tls', 'leaf_budget'];

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

const LISTENERS = ['http', 'connect', 'socks5', 'inspect'] as const;

/**
 * The counters live here as plain numbers and reach prom-client only when /metrics is read (its
 * `collect` hook). Why: a labelled prom-client inc() hashes its labels on every call; the listener paths
 * counted three of them per request, about 1 µs of a request's CPU in a profile, for numbers read
 * once every scrape interval.
 */
export class ForwardMetrics {
  readonly totals: Record<ListenerName, ListenerTotals> = {
    http: zero(),
    connect: zero(),
    socks5: zero(),
    inspect: zero(),
  };
  readonly handshakes: Record<HandshakeResult, number> = {
    ok: 0,
    client_refused: 0,
    not_tls: 0,
    leaf_budget: 0,
  };
  /** TLS contexts cached for inspected hosts now (set by the listeners when inspection is wired). */
  contexts: () => number = () => 0;
  /** Requests by `listener outcome`. */
  readonly #outcomes = new Map<string, number>();

  constructor(registry: Registry) {
    const registers = [registry];
    const totals = this.totals;
    const outcomes = this.#outcomes;
    new Counter({
      name: 'rota_forward_requests_total',
      help: 'Requests and tunnels of the forward-proxy listeners, by listener and outcome',
      labelNames: ['listener', 'outcome'],
      registers,
      collect(this: Counter<'listener' | 'outcome'>) {
        this.reset();
        for (const [key, n] of outcomes) {
          const [listener = '', outcome = ''] = key.split(' ');
          this.inc({ listener, outcome }, n);
        }
      },
    });
    new Counter({
      name: 'rota_forward_bytes_total',
      help: 'Bytes relayed by the forward-proxy listeners, by listener and direction (up: to the target)',
      labelNames: ['listener', 'direction'],
      registers,
      collect(this: Counter<'listener' | 'direction'>) {
        this.reset();
        for (const l of LISTENERS) {
          if (totals[l].bytesUp > 0) this.inc({ listener: l, direction: 'up' }, totals[l].bytesUp);
          if (totals[l].bytesDown > 0) this.inc({ listener: l, direction: 'down' }, totals[l].bytesDown);
        }
      },
    });
    const handshakes = this.handshakes;
    new Counter({
      name: 'rota_inspect_handshakes_total',
      help:
        'TLS handshakes of inspected connections: ok, refused by the client (Rota CA not trusted), not TLS, ' +
        'or closed because the client had used its budget of new hosts (leaf_budget)',
      labelNames: ['result'],
      registers,
      collect(this: Counter<'result'>) {
        this.reset();
        for (const r of HANDSHAKE_RESULTS) this.inc({ result: r }, handshakes[r]);
      },
    });
    const contexts = () => this.contexts();
    new Gauge({
      name: 'rota_inspect_contexts',
      help: 'TLS contexts (leaf certificates) cached for inspected hosts',
      registers,
      collect(this: Gauge) {
        this.set(contexts());
      },
    });
    new Gauge({
      name: 'rota_forward_active_tunnels',
      help: 'Tunnels open now, by listener',
      labelNames: ['listener'],
      registers,
      collect(this: Gauge<'listener'>) {
        for (const l of LISTENERS) this.set({ listener: l }, totals[l].openTunnels);
      },
    });
  }

  /** One request or tunnel answered: `code` null for a success. */
  answered(listener: ListenerName, code: string | null): void {
    const t = this.totals[listener];
    t.requests++;
    if (code === null) t.succeeded++;
    else t.refused++;
    const key = `${listener} ${code === null ? 'success' : code.toLowerCase()}`;
    this.#outcomes.set(key, (this.#outcomes.get(key) ?? 0) + 1);
  }

  bytes(listener: ListenerName, up: number, down: number): void {
    const t = this.totals[listener];
    t.bytesUp += up;
    t.bytesDown += down;
  }

  handshake(result: HandshakeResult): void {
    this.handshakes[result]++;
  }

  tunnelOpened(listener: ListenerName): void {
    this.totals[listener].openTunnels++;
  }

  tunnelClosed(listener: ListenerName): void {
    this.totals[listener].openTunnels--;
  }
}
