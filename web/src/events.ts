/**
 * The event feed: breaker transitions as `live` reports them (by a timestamp cursor, so each arrives
 * once), and bans as they appear among the most recent cool-downs. Newest first, at most 100 entries.
 */
import { byId, fmtTime, h } from './dom.ts';
import type { BanView, BreakerEventView, Live } from './types.ts';

const MAX_ITEMS = 100;

const REASONS: Record<string, string> = {
  threshold: 'failure threshold reached',
  timeout_elapsed: 'timeout elapsed, next request is a trial',
  trial_succeeded: 'trial request succeeded',
  trial_failed: 'trial request failed',
  manual_reset: 'reset by hand',
};

export class EventFeed {
  readonly #list = byId<HTMLOListElement>('events');
  readonly #empty = byId('events-empty');
  /** Breaker event keys at the cursor's millisecond: the next call returns that millisecond again. */
  #atCursor = new Set<string>();
  #cursor = 0;
  readonly #bans = new Set<string>();

  /** `events_since` for the next `live` call (epoch ms). */
  get cursor(): number {
    return this.#cursor;
  }

  /** Adds what is new; true when a breaker changed state (the table is then refreshed at once). */
  update(live: Live): boolean {
    let changed = false;
    for (const e of live.breaker_events) {
      const key = `${e.timestamp}|${e.proxy_id}|${e.from_state}|${e.to_state}`;
      if (e.timestamp < this.#cursor || (e.timestamp === this.#cursor && this.#atCursor.has(key))) continue;
      if (e.timestamp > this.#cursor) {
        this.#cursor = e.timestamp;
        this.#atCursor = new Set();
      }
      this.#atCursor.add(key);
      this.#add(breakerItem(e));
      changed = true;
    }
    const current = new Set<string>();
    for (const b of live.bans.recent) {
      const key = `${b.proxy_id}|${b.host}|${b.count}`;
      current.add(key);
      if (!this.#bans.has(key)) this.#add(banItem(b));
    }
    // Only the pairs still listed are remembered: the set stays as small as the list.
    for (const k of this.#bans) if (!current.has(k)) this.#bans.delete(k);
    for (const k of current) this.#bans.add(k);
    this.#empty.hidden = this.#list.childElementCount > 0;
    return changed;
  }

  #add(item: HTMLLIElement): void {
    this.#list.prepend(item);
    while (this.#list.childElementCount > MAX_ITEMS) this.#list.lastElementChild?.remove();
  }
}

function stamp(ms: number): HTMLTimeElement {
  return h('time', { datetime: new Date(ms).toISOString() }, fmtTime(ms));
}

function breakerItem(e: BreakerEventView): HTMLLIElement {
  const reason = REASONS[e.reason] ?? e.reason;
  const failures = e.reason === 'threshold' ? `, ${e.failure_count} failures` : '';
  return h(
    'li',
    { class: `event to-${e.to_state}` },
    stamp(e.timestamp),
    h('span', { class: 'tag' }, 'breaker'),
    h('span', { class: 'what' }, `${e.url ?? `${e.proxy_id} (removed)`} ${e.from_state} → ${e.to_state}`),
    h('span', { class: 'why' }, `${reason}${failures}`),
  );
}

/** Stamped with the ban's own start, as the server recorded it (the same at every page load). */
function banItem(b: BanView): HTMLLIElement {
  const repeat = b.count > 1 ? ` (ban ${b.count} in a row)` : '';
  return h(
    'li',
    { class: 'event ban' },
    stamp(b.since),
    h('span', { class: 'tag' }, 'ban'),
    h('span', { class: 'what' }, `${b.url ?? `${b.proxy_id} (removed)`} banned by ${b.host}`),
    h('span', { class: 'why' }, `cooling down ${fmtTime(b.since)} – ${fmtTime(b.until)}${repeat}`),
  );
}
