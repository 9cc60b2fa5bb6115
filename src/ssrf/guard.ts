import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { classifyAddressWith } from './address.ts';
import { AllowList } from './allow.ts';
import { BoundedCache, type Clock } from './cache.ts';
import { hostNameReason } from './host.ts';
import type { SsrfReason, SsrfVerdict } from './types.ts';

export { classifyAddress } from './address.ts';
export { validateAllowList } from './allow.ts';
export type { SsrfReason, SsrfVerdict } from './types.ts';

/** Returns every address of `host`; `signal` fires at the timeout (the default resolver cannot use it). */
export type Resolver = (host: string, signal: AbortSignal) => Promise<string[]>;

export interface SsrfGuardOptions {
  readonly allow: readonly string[];
  readonly resolve?: Resolver;
  readonly resolveTimeoutMs?: number;
  /** Addresses classified and host names resolved that are remembered. Default 1,000 each. */
  readonly cacheSize?: number;
  /** How long a successful DNS answer is reused. Default 30 s; 0 resolves on every check. */
  readonly dnsCacheTtlMs?: number;
  readonly now?: Clock;
}

/** getaddrinfo, like the HTTP client: it honours /etc/hosts, which may map a public-looking name inward. */
export async function lookupAll(host: string): Promise<string[]> {
  const records = await lookup(host, { all: true, verbatim: true });
  return records.map((r) => r.address);
}

const FIXED: Partial<Record<SsrfReason, string>> = {
  scheme: 'only http and https target URLs are allowed',
  credentials: 'the target URL must not contain credentials; send them in headers',
  malformed: 'the target URL does not parse',
  unresolvable: 'the target host did not resolve',
  internal_domain: 'the target host is an internal name',
};

const ADDRESS: Partial<Record<SsrfReason, string>> = {
  loopback: 'a loopback address',
  private: 'a private address',
  link_local: 'a link-local address',
  reserved: 'a reserved address',
  multicast: 'a multicast address',
  broadcast: 'the broadcast address',
  unspecified: 'the unspecified address',
};

type Origin = 'literal' | 'name' | 'dns';

// Messages never include the URL (credentials) nor resolved addresses (they would map the internal DNS).
function reject(reason: SsrfReason, origin: Origin = 'literal'): SsrfVerdict {
  const subject = origin === 'dns' ? 'the target host resolves to' : 'the target is';
  let message = FIXED[reason] ?? `${subject} ${ADDRESS[reason] ?? 'not allowed'}`;
  if (reason === 'loopback' && origin === 'name') message = 'the target host is localhost';
  return { ok: false, reason, message };
}

export class SsrfGuard {
  private readonly allow: AllowList;
  private readonly resolve: Resolver;
  private readonly timeoutMs: number;
  /**
   * An address's class depends only on the address and the allow list, which is fixed at start-up, so
   * it never expires; the bound only keeps a stream of distinct targets from growing memory.
   */
  private readonly classes: BoundedCache<SsrfReason | null>;
  /** Successful answers only: a failure or a timeout is retried on the next check. */
  private readonly answers: BoundedCache<readonly string[]> | null;

  constructor(opts: SsrfGuardOptions) {
    this.allow = new AllowList(opts.allow);
    this.resolve = opts.resolve ?? lookupAll;
    this.timeoutMs = opts.resolveTimeoutMs ?? 2000;
    const max = opts.cacheSize ?? 1000;
    const ttlMs = opts.dnsCacheTtlMs ?? 30_000;
    this.classes = new BoundedCache({ max });
    this.answers = ttlMs > 0 ? new BoundedCache({ max, ttlMs, now: opts.now }) : null;
  }

  /**
   * Full check: scheme, user-info, host rules, literal IPs in every notation, then DNS (all A/AAAA records)
   * with a timeout. Never rejects: anything unexpected becomes a negative verdict.
   */
  async check(target: string | URL): Promise<SsrfVerdict> {
    let url: URL;
    try {
      // A URL object is only read here, never changed: no need to parse it again.
      url = typeof target === 'string' ? new URL(target) : target;
    } catch {
      return reject('malformed');
    }
    try {
      return await this.checkUrl(url);
    } catch {
      return reject('unresolvable');
    }
  }

  /**
   * The verdict when it needs no DNS lookup (a literal address, an allowed or refused name, a name
   * resolved within the cache's lifetime); null when only check() can tell. The listeners ask this first,
   * so that the common call is decided without a promise.
   */
  checkKnown(url: URL): SsrfVerdict | null {
    try {
      const early = this.#beforeDns(url);
      if (typeof early !== 'string') return early;
      const cached = this.answers?.get(early);
      return cached === undefined ? null : this.verdict(url, cached, 'dns');
    } catch {
      return null; // check() decides, and turns the surprise into a refusal
    }
  }

  /** A verdict reached without DNS, or the host name to resolve. */
  #beforeDns(url: URL): SsrfVerdict | string {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return reject('scheme');
    if (url.username !== '' || url.password !== '') return reject('credentials');
    // The host the HTTP client will connect to is exactly the one WHATWG parsing yields (backslashes,
    // percent-encoding, IDNA and numeric IPv4 forms are already resolved into it), so that is what is checked.
    // A host that ends in a number is always rewritten to dotted IPv4 or refused by the parser, so no
    // inet_aton-style reading by getaddrinfo can reach an address the check did not see (host.test.ts proves
    // parseNumericIPv4, the inet_aton reading, agrees with WHATWG).
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    if (isIP(host) !== 0) return this.verdict(url, [host], 'literal');
    if (this.allow.hasHost(host)) return { ok: true, url: url.href, addresses: [] };
    const byName = hostNameReason(host);
    if (byName) return reject(byName, 'name');
    return host;
  }

  private async checkUrl(url: URL): Promise<SsrfVerdict> {
    const early = this.#beforeDns(url);
    if (typeof early !== 'string') return early;
    const host = early;
    const addresses = await this.addressesOf(host);
    if (addresses === null) return reject('unresolvable');
    return this.verdict(url, addresses, 'dns');
  }

  private async addressesOf(host: string): Promise<readonly string[] | null> {
    const cached = this.answers?.get(host);
    if (cached !== undefined) return cached;
    const fresh = await this.resolveWithTimeout(host);
    if (fresh !== null) this.answers?.set(host, fresh);
    return fresh;
  }

  private verdict(url: URL, addresses: readonly string[], origin: Origin): SsrfVerdict {
    for (const ip of addresses) {
      const reason = this.classify(ip);
      if (reason) return reject(reason, origin);
    }
    return { ok: true, url: url.href, addresses };
  }

  /** The rule for one address (allow list applied), for dialers that resolve the target themselves. */
  checkAddress(ip: string): SsrfReason | null {
    return this.classify(ip);
  }

  private classify(ip: string): SsrfReason | null {
    const known = this.classes.get(ip);
    if (known !== undefined) return known;
    const reason = classifyAddressWith(ip, (a) => this.allow.hasAddress(a));
    this.classes.set(ip, reason);
    return reason;
  }

  /** Distinct IP addresses, or null on failure, timeout, an empty answer or anything that is not an IP. */
  private async resolveWithTimeout(host: string): Promise<string[] | null> {
    const ctl = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, fail) => {
      timer = setTimeout(() => {
        ctl.abort();
        fail(new Error('dns timeout'));
      }, this.timeoutMs);
    });
    try {
      const answer = await Promise.race([
        Promise.resolve().then(() => this.resolve(host, ctl.signal)),
        timeout,
      ]);
      if (!Array.isArray(answer)) return null;
      const unique = [...new Set(answer)];
      if (unique.length === 0) return null;
      return unique.every((a) => typeof a === 'string' && isIP(a) !== 0) ? unique : null;
    } catch {
      return null;
    } finally {
      clearTimeout(timer);
    }
  }
}
