import ipaddr from 'ipaddr.js';

/*
 * Client connections held by the process, across the API server and both listeners together.
 *
 *   'connection' ──▶ admit(ip, door) ──admitted──▶ counted; release() on the socket's 'close'
 *                         │ refused
 *                         ▼
 *                   the door's refusal (connection-guard.ts): 503 TOO_MANY_CONNECTIONS or a close
 *
 * Two caps: connections of one client address (ROTA_MAX_CONNECTIONS_PER_IP) and of all clients
 * (ROTA_MAX_CONNECTIONS). The API may go `apiReserve` connections past the total, so that a flood of the
 * listeners leaves /api/v1/health and /metrics reachable. One Map of counts: O(1) per connection.
 *
 * A peer's address is read only when it can matter (admitHeld): while fewer connections than the per-address
 * cap are open in all, no address can be over it, and reading one is a getpeername(2) (~3.5 µs a
 * connection here, ~1% of a CONNECT tunnel's CPU). From that many on, every open connection's address is
 * read once and counted; below half of it, counting by address stops again.
 */

export type Door = 'api' | 'http' | 'socks5';
export type RefusalReason = 'per_ip' | 'total';

export type CapVerdict =
  | { readonly type: 'admitted' }
  | { readonly type: 'refused'; readonly reason: RefusalReason };

export interface CapsOptions {
  readonly maxPerIp: number;
  readonly maxTotal: number;
  /** Connections the API may hold past maxTotal; default max(4, maxTotal / 64). */
  readonly apiReserve?: number;
  /** Peer addresses counted against the total only (reverse proxies carrying many clients). */
  readonly exempt?: (address: string) => boolean;
}

const ADMITTED: CapVerdict = Object.freeze({ type: 'admitted' });
const PER_IP: CapVerdict = Object.freeze({ type: 'refused', reason: 'per_ip' });
const TOTAL: CapVerdict = Object.freeze({ type: 'refused', reason: 'total' });
const MAPPED_PREFIX = '::ffff:';

/**
 * The key a peer address is counted under: an IPv4 address as itself (also when the dual-stack socket
 * reports it as ::ffff:a.b.c.d), an IPv6 address by its /64, the block one host is usually given.
 */
export function peerKey(address: string): string {
  if (address.startsWith(MAPPED_PREFIX) && address.includes('.')) return address.slice(MAPPED_PREFIX.length);
  if (!address.includes(':')) return address;
  if (!ipaddr.IPv6.isValid(address)) return address;
  const parts = ipaddr.IPv6.parse(address).parts.slice(0, 4);
  return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
}

/** What admitHeld needs of a connection: its peer's address, read only when it can matter. */
export interface Peer {
  readonly remoteAddress?: string | undefined;
}

/** A connection as counted by admitHeld: its key once its address was read, else null. */
export interface Held {
  key: string | null;
  readonly door: Door;
  readonly peer: Peer;
}

export class ConnectionCaps {
  readonly maxPerIp: number;
  readonly maxTotal: number;
  readonly apiReserve: number;
  readonly #exempt: ((address: string) => boolean) | null;
  readonly #byIp = new Map<string, number>();
  readonly #open: Record<Door, number> = { api: 0, http: 0, socks5: 0 };
  /** Refusals by `door reason`, for /metrics. */
  readonly refused = new Map<string, number>();
  #total = 0;
  /** Connections admitted without reading their address (fewer than maxPerIp open in all). */
  readonly #anonymous = new Set<Held>();
  /** Connections admitted by admitHeld and counted by address, while #byAddress is on. */
  readonly #keyed = new Set<Held>();
  #byAddress = false;

  constructor(o: CapsOptions) {
    this.maxPerIp = o.maxPerIp;
    this.maxTotal = o.maxTotal;
    this.apiReserve = o.apiReserve ?? Math.max(4, Math.floor(o.maxTotal / 64));
    this.#exempt = o.exempt ?? null;
  }

  /**
   * Counts the connection under `key` (peerKey() of `address`) when both caps leave room; the caller
   * calls release() once it closes.
   */
  admit(key: string, door: Door, address: string = key): CapVerdict {
    const limit = door === 'api' ? this.maxTotal + this.apiReserve : this.maxTotal;
    const n = this.#byIp.get(key) ?? 0;
    let verdict = ADMITTED;
    if (this.#total >= limit) verdict = TOTAL;
    else if (n >= this.maxPerIp && !this.#exempt?.(address)) verdict = PER_IP;
    if (verdict.type === 'refused') {
      const k = `${door} ${verdict.reason}`;
      this.refused.set(k, (this.refused.get(k) ?? 0) + 1);
      return verdict;
    }
    this.#byIp.set(key, n + 1);
    this.#total++;
    this.#open[door]++;
    return verdict;
  }

  /**
   * admit(), reading the peer's address only when the per-address cap can matter; the caller calls
   * releaseHeld() once the connection closes.
   */
  admitHeld(peer: Peer, door: Door): Held | CapVerdict {
    if (!this.#byAddress && this.#total < this.maxPerIp) {
      if (this.#total >= (door === 'api' ? this.maxTotal + this.apiReserve : this.maxTotal)) {
        return this.admit('', door); // refused for the total, counted as such
      }
      const held: Held = { key: null, door, peer };
      this.#anonymous.add(held);
      this.#total++;
      this.#open[door]++;
      return held;
    }
    this.#countByAddress();
    const address = peer.remoteAddress ?? 'unknown';
    const key = peerKey(address);
    const verdict = this.admit(key, door, address);
    if (verdict.type === 'refused') return verdict;
    const held: Held = { key, door, peer };
    this.#keyed.add(held);
    return held;
  }

  releaseHeld(held: Held): void {
    if (held.key === null) {
      if (!this.#anonymous.delete(held)) return;
      this.#total--;
      this.#open[held.door]--;
    } else {
      if (!this.#keyed.delete(held)) return;
      this.release(held.key, held.door);
    }
    if (this.#byAddress && this.#total < this.maxPerIp / 2) this.#stopCountingByAddress();
  }

  /** Every connection admitted without its address gets it read and counted. */
  #countByAddress(): void {
    if (this.#byAddress) return;
    this.#byAddress = true;
    for (const held of this.#anonymous) {
      held.key = peerKey(held.peer.remoteAddress ?? 'unknown');
      this.#byIp.set(held.key, (this.#byIp.get(held.key) ?? 0) + 1);
      this.#keyed.add(held);
    }
    this.#anonymous.clear();
  }

  #stopCountingByAddress(): void {
    this.#byAddress = false;
    for (const held of this.#keyed) {
      const n = this.#byIp.get(held.key ?? '') ?? 1;
      if (n <= 1) this.#byIp.delete(held.key ?? '');
      else this.#byIp.set(held.key ?? '', n - 1);
      held.key = null;
      this.#anonymous.add(held);
    }
    this.#keyed.clear();
  }

  release(key: string, door: Door): void {
    const n = this.#byIp.get(key);
    if (n === undefined) return;
    if (n <= 1) this.#byIp.delete(key);
    else this.#byIp.set(key, n - 1);
    this.#total--;
    this.#open[door]--;
  }

  /** Connections held now, all doors together. */
  get total(): number {
    return this.#total;
  }

  /** Connections held now through one door. */
  open(door: Door): number {
    return this.#open[door];
  }

  /** Connections one address (its key) holds now. */
  of(key: string): number {
    return this.#byIp.get(key) ?? 0;
  }

  /** Client addresses holding a connection now. */
  get addresses(): number {
    return this.#byIp.size;
  }
}
