/** DECISIONS: an SSRF rejection is 400 INVALID_URL with details.reason one of these. */
export type SsrfReason =
  | 'scheme'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'internal_domain'
  | 'reserved'
  | 'multicast'
  | 'unspecified'
  | 'credentials'
  | 'unresolvable';

export type SsrfVerdict =
  | { readonly ok: true; readonly addresses: readonly string[] }
  | { readonly ok: false; readonly reason: SsrfReason; readonly message: string };
