import type { AddressInfo } from 'node:net';

/** A door as start-up reports it: its bound address, or null when it is off (port 0 in the config). */
export interface BoundDoor {
  readonly name: 'api' | 'http' | 'socks5';
  readonly address: string | null;
  readonly port: number | null;
}

const TITLE = { api: 'API', http: 'HTTP proxy', socks5: 'SOCKS5' } as const;
const OFF = { api: 'ROTA_PORT', http: 'ROTA_PROXY_PORT', socks5: 'ROTA_SOCKS_PORT' } as const;

/** What a server's address() gave, as a BoundDoor (a pipe path or a closed server: no port). */
export function boundDoor(name: BoundDoor['name'], addr: AddressInfo | string | null): BoundDoor {
  if (addr === null || typeof addr === 'string') return { name, address: addr, port: null };
  return { name, address: addr.address, port: addr.port };
}

/**
 * One info line per door (the API, the HTTP forward proxy, the SOCKS5 listener) with the address and
 * port it is bound to: the real port, also when the configuration asked for 0. A listener that is off
 * gets a line too, so the start-up log always names all three.
 */
export function logListening(
  logger: { info(fields: object, msg: string): void },
  doors: readonly BoundDoor[],
): void {
  for (const d of doors) {
    if (d.port === null) {
      if (d.address !== null) {
        logger.info(
          { listener: d.name, address: d.address, port: null },
          `${TITLE[d.name]} listening on ${d.address}`,
        );
        continue;
      }
      logger.info({ listener: d.name, address: null, port: null }, `${TITLE[d.name]} off (${OFF[d.name]}=0)`);
      continue;
    }
    const host = d.address?.includes(':') ? `[${d.address}]` : d.address;
    logger.info(
      { listener: d.name, address: d.address, port: d.port },
      `${TITLE[d.name]} listening on ${host}:${d.port}`,
    );
  }
}
