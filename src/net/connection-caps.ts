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
