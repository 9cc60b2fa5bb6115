import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { classifyAddressWith } from './address.ts';
import { AllowList } from './allow.ts';
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

  constructor(opts: SsrfGuardOptions) {
    this.allow = new AllowList(opts.allow);
    this.resolve = opts.resolve ?? lookupAll;
    this.timeoutMs = opts.resolveTimeoutMs ?? 2000;
  }

  /**
   * Full check: scheme, user-info, host rules, literal IPs in every notation, then DNS (all A/AAAA records)
   * with a timeout. Never rejects: anything unexpected becomes a negative verdict.
   */
  async check(target: string | URL): Promise<SsrfVerdict> {
    let url: URL;
    try {
      url = new URL(typeof target === 'string' ? target : target.href);
    } catch {
      return reject('malformed');
    }
    try {
      return await this.checkUrl(url);
    } catch {
      return reject('unresolvable');
    }
  }

  private async checkUrl(url: URL): Promise<SsrfVerdict> {
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
    const addresses = await this.resolveWithTimeout(host);
    if (addresses === null) return reject('unresolvable');
    return this.verdict(url, addresses, 'dns');
  }

  private verdict(url: URL, addresses: readonly string[], origin: Origin): SsrfVerdict {
    for (const ip of addresses) {
      const reason = classifyAddressWith(ip, (a) => this.allow.hasAddress(a));
      if (reason) return reject(reason, origin);
    }
    return { ok: true, url: url.href, addresses };
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
