/**
 * HTTPS inspection's certificate room: the CA (authority.ts) and the leaf certificates it signs for the
 * hosts a door terminates TLS for (leaves.ts). Nothing here listens, routes or reads settings; a door and
 * the API use this:
 *
 *   const inspection = createInspection(config, store, logger);   // cheap: nothing made until needed
 *   await inspection.authority.caPem();                           // the CA certificate, PEM, to download
 *   tls.createServer({ SNICallback: sniCallback(inspection.leaves), ALPNProtocols: [...] }, ...);
 *   await inspection.leaves.contextFor(host);                     // when the client sent no SNI
 *   inspection.leaves.size;                                       // a gauge
 *
 * Configuration: ROTA_CA_CERT + ROTA_CA_KEY (the operator's CA, PEM files; both or neither, checked at
 * load, ca-files.ts) and ROTA_INSPECT_CACHE (TLS contexts kept, default 10,000).
 */
import type { SecureContext } from 'node:tls';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { ProxyStore } from '../store/types.ts';
import { InspectionAuthority } from './authority.ts';
import { LeafCache } from './leaves.ts';

export { type AuthorityOptions, type CaOrigin, InspectionAuthority } from './authority.ts';
export { type Leaf, LeafCache, type LeafCacheOptions } from './leaves.ts';

export interface Inspection {
  readonly authority: InspectionAuthority;
  readonly leaves: LeafCache;
}

export function createInspection(
  config: Pick<Config, 'inspectCa' | 'inspectCacheMax'>,
  store: ProxyStore | null,
  logger: Logger,
): Inspection {
  const authority = new InspectionAuthority({ files: config.inspectCa, store, logger });
  return { authority, leaves: new LeafCache({ authority, max: config.inspectCacheMax }) };
}

/** A TLS server's SNICallback that answers with the leaf of the name the client asked for. */
export function sniCallback(
  leaves: LeafCache,
): (servername: string, cb: (err: Error | null, ctx?: SecureContext) => void) => void {
  return (servername, cb) => {
    leaves.contextFor(servername).then(
      (ctx) => cb(null, ctx),
      (err: unknown) => cb(err instanceof Error ? err : new Error(String(err))),
    );
  };
}
