/**
 * An SSRF rejection is 400 INVALID_URL with details.reason one of these (docs/decisions.md, "Errors").
 * `broadcast` (255.255.255.255) and `malformed` (a URL that does not parse reached the guard) were added to
 * the original list.
 */
export type SsrfReason =
  | 'scheme'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'internal_domain'
  | 'reserved'
  | 'multicast'
  | 'broadcast'
  | 'unspecified'
  | 'credentials'
  | 'unresolvable'
  | 'malformed';

/**
 * `url` is the WHATWG serialisation of the checked URL: send that, not the caller's string, so that no other
 * parser gets a chance to read a different host out of it. `addresses` are the checked addresses (empty when
 * the host is on the allow list by name and was not resolved); a caller may pin the connection to them.
 */
export type SsrfVerdict =
  | { readonly ok: true; readonly url: string; readonly addresses: readonly string[] }
  | { readonly ok: false; readonly reason: SsrfReason; readonly message: string };
