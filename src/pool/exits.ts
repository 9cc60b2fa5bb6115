import type { ProxyEntry } from './entry.ts';

/**
 * Members by the exit address last seen for them (ROTA_EXIT_IP_URL), so that "who else exits from here?"
 * is a lookup: the API's `exit_shared_with` and a ban's spread to every member sharing the banned one's
 * exit (bans/judge.ts). Only members with a known exit are held.
 */
export class ExitIndex {
  readonly #byIp = new Map<string, Set<ProxyEntry>>();

  add(e: ProxyEntry): void {
    const ip = e.exit?.ip;
    if (ip === undefined) return;
    const set = this.#byIp.get(ip);
    if (set) set.add(e);
    else this.#byIp.set(ip, new Set([e]));
  }

  /** Call with the entry's exit as it was indexed (before it changes). */
  delete(e: ProxyEntry): void {
    const ip = e.exit?.ip;
    if (ip === undefined) return;
    const set = this.#byIp.get(ip);
    if (!set) return;
    set.delete(e);
    if (set.size === 0) this.#byIp.delete(ip);
  }

  /** The members last seen exiting from `ip` (empty when none). */
  at(ip: string): ReadonlySet<ProxyEntry> {
    return this.#byIp.get(ip) ?? NONE;
  }

  /** How many other members share `e`'s exit. */
  sharedWith(e: ProxyEntry): number {
    const ip = e.exit?.ip;
    return ip === undefined ? 0 : Math.max(0, this.at(ip).size - 1);
  }
}

const NONE: ReadonlySet<ProxyEntry> = new Set();
