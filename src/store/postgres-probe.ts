/**
 * Tells whether PostgreSQL answers, for `/api/v1/ready`: a `SELECT 1` every interval on a connection of
 * its own (so a pool busy with slow writes cannot make a healthy database look gone), each with a short
 * timeout. The timer is unref'd: it never keeps the process alive. Reports only changes.
 */
import pg from 'pg';

export interface ProbeOptions {
  readonly url: string;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  /** Called with the new state each time it flips. */
  readonly onChange: (up: boolean) => void;
}

export class ReachabilityProbe {
  private readonly options: ProbeOptions;
  private client: pg.Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private inflight: Promise<void> | null = null;
  private up = true;

  constructor(options: ProbeOptions) {
    this.options = options;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      // A probe that has not timed out yet is not doubled.
      this.inflight ??= this.tick().finally(() => {
        this.inflight = null;
      });
    }, this.options.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.inflight;
    await this.drop();
  }

  /** Someone else saw the database fail (a write): believe it at once rather than at the next tick. */
  markDown(): void {
    this.set(false);
  }

  private async tick(): Promise<void> {
    try {
      const client = await this.connection();
      await client.query('SELECT 1');
      this.set(true);
    } catch {
      this.set(false);
      await this.drop();
    }
  }

  private async connection(): Promise<pg.Client> {
    if (this.client) return this.client;
    const client = new pg.Client({
      connectionString: this.options.url,
      connectionTimeoutMillis: this.options.timeoutMs,
      statement_timeout: this.options.timeoutMs,
      query_timeout: this.options.timeoutMs,
      application_name: 'rota-probe',
    });
    // A lost connection is reported by the next query; without a listener it would crash the process.
    client.on('error', () => {});
    this.client = client;
    await client.connect();
    return client;
  }

  private async drop(): Promise<void> {
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => {});
  }

  private set(up: boolean): void {
    if (up === this.up) return;
    this.up = up;
    this.options.onChange(up);
  }
}
