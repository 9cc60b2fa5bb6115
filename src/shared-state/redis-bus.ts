import type { ChangeBus } from './bus.ts';
import type { Envelope, Notice, NoticeHandler } from './notices.ts';
import type { RedisLink } from './redis-link.ts';

const CHANNEL = 'rota:notices';

/**
 * Notices over Redis pub/sub. A notice published while Redis is down is lost; the instances resynchronise
 * from the store and the shared keys when it is back (replicator.ts), so nothing depends on every notice
 * arriving.
 */
export class RedisBus implements ChangeBus {
  readonly #link: RedisLink;
  readonly #id: string;
  readonly #handlers: NoticeHandler[] = [];

  constructor(link: RedisLink, instanceId: string) {
    this.#link = link;
    this.#id = instanceId;
    link.listen(CHANNEL, (text) => {
      let env: Envelope;
      try {
        env = JSON.parse(text) as Envelope;
      } catch {
        return;
      }
      if (env.from === this.#id) return;
      for (const h of this.#handlers) h(env.notice, env.from);
    });
  }

  get up(): boolean {
    return this.#link.up;
  }

  publish(notice: Notice): void {
    if (!this.#link.up) return;
    const env: Envelope = { from: this.#id, notice };
    this.#link.cmd.publish(CHANNEL, JSON.stringify(env)).catch(() => {});
  }

  subscribe(handler: NoticeHandler): void {
    this.#handlers.push(handler);
  }

  async close(): Promise<void> {}
}
