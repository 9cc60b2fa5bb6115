import { type Static, Type } from 'typebox';
import { MAX_PATTERN_LENGTH, MAX_PATTERNS } from '../inspect/patterns.ts';
import { checkedByHandler } from './common.ts';
import { HOST_PATTERN_PATTERN } from './patterns.ts';

/** `GET` / `PUT /api/v1/inspection`: which CONNECT tunnels HTTPS inspection terminates. */

const PATTERN_TEXT =
  '`example.com` (that host), `*.example.com` (its subdomains, not itself), `*` (every host), or an ' +
  'IPv4 or IPv6 address; case-insensitive, a trailing dot ignored';

/** The validator checks the length; the handler checks the pattern it states (schemas/common.ts). */
const Pattern = Type.String({
  minLength: 1,
  maxLength: MAX_PATTERN_LENGTH,
  description: PATTERN_TEXT,
  ...checkedByHandler(HOST_PATTERN_PATTERN),
});

const HOSTS_TEXT = 'Hosts whose tunnels are inspected without the client asking';
const PASSTHROUGH_TEXT =
  'Hosts whose tunnels are never inspected, even when `hosts` names them or the client asks';

export const InspectionView = Type.Object({
  hosts: Type.Array(Type.String(), { description: `${HOSTS_TEXT} (canonical: lower case, no trailing dot)` }),
  passthrough: Type.Array(Type.String(), { description: PASSTHROUGH_TEXT }),
  hosts_source: Type.Enum(['environment', 'storage'], {
    description:
      '`environment`: ROTA_INSPECT_HOSTS; `storage`: set by a PUT (kept across restarts with a SQLite or ' +
      'PostgreSQL store)',
  }),
  ca_origin: Type.Union([Type.Enum(['operator', 'store', 'memory']), Type.Null()], {
    description:
      'Where the CA in use came from: the operator (ROTA_CA_CERT), the store, or made in memory at this ' +
      'start; null until it is first needed (a download of ca.pem or an inspected tunnel)',
  }),
});
export type InspectionViewT = Static<typeof InspectionView>;

const list = (description: string) =>
  Type.Optional(Type.Array(Pattern, { maxItems: MAX_PATTERNS, description: `${description}; replaces it` }));

export const InspectionUpdate = Type.Object(
  { hosts: list(HOSTS_TEXT), passthrough: list(PASSTHROUGH_TEXT) },
  { additionalProperties: false },
);
export type InspectionUpdateT = Static<typeof InspectionUpdate>;
