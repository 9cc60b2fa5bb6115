/**
 * The shapes of the API answers the dashboard reads, taken from the API's own TypeBox schemas
 * (src/schemas/): the schema that validates and documents an answer is the one the dashboard is typed
 * against. `import type` only: esbuild erases these imports, so nothing of src/ reaches the bundle.
 */
import type { Static } from 'typebox';
import type { BreakerStateName } from '../../src/breaker/types.ts';
import type { ProxySchema } from '../../src/schemas/proxy.ts';

export type {
  BanView,
  BreakerEventView,
  Info,
  Live,
  ProxiesPage as TablePage,
  Row,
  Samples,
} from '../../src/schemas/dashboard.ts';
export type { HostRowT as HostRow } from '../../src/schemas/hosts.ts';
export type { ImportSummary } from '../../src/schemas/import.ts';
export type {
  RequestRecordT as RequestRecord,
  RequestsPageT as RequestsPage,
} from '../../src/schemas/requests.ts';

export type BreakerState = BreakerStateName;

/** What the dashboard reads of the `POST proxies` answer. */
export type ProxyCreated = Pick<Static<typeof ProxySchema>, 'id' | 'url'>;
