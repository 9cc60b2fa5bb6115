import type { Envelope, Notice, NoticeHandler } from './notices.ts';

/**
 * How instances tell each other what changed. Two implementations behind one interface, run through
 * one contract test (bus.contract.test.ts): an in-process bus (one instance, or several in a test) and
 * Redis pub/sub (redis-bus.ts). A notice reaches every other instance on the bus, never its sender.
 */
export interface ChangeBus {
  /** True while notices can travel (Redis connected). */
  readonly up: boolean;
  publish(notice: Notice): void;
  subscribe(handler: NoticeHandler): void;
  close(): Promise<void>;
}

/** The in-process hub several MemoryBus instances share (a test's "cluster"). */
export class MemoryHub {
  readonly members = new Set<MemoryBus>();
}

export class MemoryBus implements ChangeBus {
  readonly up = true;
  readonly #id: string;
  readonly #hub: MemoryHub;
  readonly #handlers: NoticeHandler[] = [];

  constructor(id: string, hub: MemoryHub = new MemoryHub()) {
    this.#id = id;
    this.#hub = hub;
    hub.members.add(this);
  }

  publish(notice: Notice): void {
    const env: Envelope = { from: this.#id, notice };
    // Asynchronous like the network: a publisher never runs its peers' handlers inside its own call.
    for (const m of this.#hub.members) if (m !== this) queueMicrotask(() => m.deliver(env));
  }

  subscribe(handler: NoticeHandler): void {
    this.#handlers.push(handler);
  }

  deliver(env: Envelope): void {
    for (const h of this.#handlers) h(env.notice, env.from);
  }

  async close(): Promise<void> {
    this.#hub.members.delete(this);
  }
}
