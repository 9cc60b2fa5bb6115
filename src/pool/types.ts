export const PROTOCOLS = ['http', 'https', 'socks4', 'socks4a', 'socks5', 'socks5h'] as const;
export type Protocol = (typeof PROTOCOLS)[number];

/** The longest proxy URL accepted. */
export const MAX_PROXY_URL_LENGTH = 2048;

export const HEALTH_VALUES = ['unknown', 'healthy', 'degraded', 'unhealthy', 'dead'] as const;
export type Health = (typeof HEALTH_VALUES)[number];

export const STATUS_VALUES = ['active', 'degraded', 'failed'] as const;
export type ProxyStatus = (typeof STATUS_VALUES)[number];

export const STATUS_FILTERS = [
  'active',
  'degraded',
  'failed',
  'healthy',
  'unhealthy',
  'unknown',
  'dead',
] as const;
export type StatusFilter = (typeof STATUS_FILTERS)[number];

/** What is persisted about a proxy. Credentials live here and nowhere that reaches a client. */
export interface ProxyRecord {
  readonly id: string;
  readonly protocol: Protocol;
  readonly host: string; // lower case; IPv6 without brackets
  readonly port: number;
  readonly username: string | null;
  readonly password: string | null;
  readonly weight: number;
  readonly country: string | null;
  readonly tags: readonly string[];
  readonly createdAt: number; // epoch ms
  readonly updatedAt: number; // epoch ms
  /** The operator's name for the entry (shown; never a credential). */
  readonly label?: string | null;
  /**
   * A provider gateway's username (and, rarely, password) with `{session}`, `{country}`, `{rand}`: a
   * credential, sealed in the store like the password, never shown.
   */
  readonly usernameTemplate?: string | null;
  readonly passwordTemplate?: string | null;
  /** The address the proxy was last seen to exit from (health checks with ROTA_EXIT_IP_URL). */
  readonly exit?: ExitIdentity | null;
  /**
   * Whether there is a username or password, when the record can tell without decrypting them (records
   * loaded from a SQL store keep both sealed until first used). Read it through hasCredentials().
   */
  readonly hasCredentials?: boolean;
}

/** What health checks learned of a proxy's exit (src/exit/). */
export interface ExitIdentity {
  readonly ip: string;
  /** epoch ms */
  readonly seenAt: number;
  /** ISO 3166-1 alpha-2 from ROTA_GEOIP_DB, upper case; null when unknown. */
  readonly country: string | null;
  readonly asn: number | null;
}

/** A provider gateway: credentials rendered per attempt from its templates (outbound/gateways.ts). */
export function isGateway(r: Pick<ProxyRecord, 'usernameTemplate' | 'passwordTemplate'>): boolean {
  return Boolean(r.usernameTemplate || r.passwordTemplate);
}

/**
 * A gateway whose username (or password) names `{country}`: the provider serves the call's country, so a
 * country filter (a listener's `-country-XX`, a rule's countries, geo-targeted) takes it whatever its own.
 */
export function servesAnyCountry(r: Pick<ProxyRecord, 'usernameTemplate' | 'passwordTemplate'>): boolean {
  return rendersCountry(r.usernameTemplate) || rendersCountry(r.passwordTemplate);
}

function rendersCountry(t: string | null | undefined): boolean {
  // Asked for every proxy of another country a country filter passes over: no string built.
  return t != null && (t.includes('{country}') || t.includes('{COUNTRY}'));
}

/** Whether the proxy has a username, a password or a template, decrypting nothing that is still sealed. */
export function hasCredentials(r: ProxyRecord): boolean {
  if (isGateway(r)) return true;
  return r.hasCredentials ?? (r.username !== null || r.password !== null);
}

/**
 * `scheme://host:port`, the only form of a proxy address that is ever shown, as one flat string.
 *
 * Why join: a string made of pieces (`${a}://${b}`) is a tree of V8 "cons" nodes, 32 bytes each, until
 * something flattens it, and a member keeps its URL for its whole life (7 nodes per URL were seen in a
 * heap snapshot of 100,000 proxies). Array.join writes one sequential string, at a third of the cost
 * of the JSON round trip that flattened it before.
 */
export function publicUrl(r: Pick<ProxyRecord, 'protocol' | 'host' | 'port'>): string {
  return r.host.includes(':')
    ? [r.protocol, '://[', r.host, ']:', r.port].join('')
    : [r.protocol, '://', r.host, ':', r.port].join('');
}

type Identified = Pick<
  ProxyRecord,
  'protocol' | 'host' | 'port' | 'username' | 'usernameTemplate' | 'passwordTemplate'
>;

/**
 * Who an entry is at its address, beside the URL: its username; for a gateway without one, its templates
 * (one provider endpoint, several zones: `…zone-res-session-{session}` and `…zone-isp-session-{session}`
 * are two gateways). Never a string a username could be (it starts with U+0001).
 */
export function identityName(r: Omit<Identified, 'protocol' | 'host' | 'port'>): string {
  // Read once: a stored username is decrypted on read (store/rows.ts).
  const username = r.username;
  if (username != null) return username;
  if (!r.usernameTemplate && !r.passwordTemplate) return '';
  return `\u0001${r.usernameTemplate ?? ''}\u0001${r.passwordTemplate ?? ''}`;
}

/** The identity behind 409: normalised URL plus identityName (the username, or a gateway's templates). */
export function identityKey(r: Identified): string {
  return `${publicUrl(r)}\u0000${identityName(r)}`;
}
