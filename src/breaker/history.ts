import type { BreakerEvent } from './types.ts';

/**
 * Bounded event history: a ring buffer with a cap on count and on age, so that a flapping proxy cannot
 * grow memory without bound. Events are kept in the order they were observed; for any one proxy that is
 * also time order (an open → half-open event is stamped when the timeout elapsed, but it is always
 * observed before that proxy's next transition).
 */
export class EventHistory {
  private readonly buf: (BreakerEvent | undefined)[];
  private head = 0;
  private count = 0;
  private readonly retentionMs: number;

  constructor(cap: number, retentionMs: number) {
    this.buf = new Array<BreakerEvent | undefined>(Math.max(1, Math.floor(cap)));
    this.retentionMs = retentionMs;
  }

  get size(): number {
    return this.count;
  }

  push(e: BreakerEvent): void {
    const cap = this.buf.length;
    this.buf[(this.head + this.count) % cap] = e;
    if (this.count < cap) this.count++;
    else this.head = (this.head + 1) % cap;
  }

  /** Drops events older than the retention, from the oldest end. */
  expire(now: number): void {
    const oldest = now - this.retentionMs;
    while (this.count > 0) {
      const e = this.buf[this.head];
      if (e !== undefined && e.timestamp >= oldest) break;
      this.buf[this.head] = undefined;
      this.head = (this.head + 1) % this.buf.length;
      this.count--;
    }
  }

  /** Events stamped at or after `sinceMs`, oldest first. */
  since(sinceMs: number): BreakerEvent[] {
    const out: BreakerEvent[] = [];
    for (let i = 0; i < this.count; i++) {
      const e = this.buf[(this.head + i) % this.buf.length];
      if (e !== undefined && e.timestamp >= sinceMs) out.push(e);
    }
    return out;
  }
}
