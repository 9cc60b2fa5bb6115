import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Config } from '../config.ts';
import type { Pool } from '../pool/pool.ts';
import type { DispatcherCache } from '../upstream/dispatchers.ts';
import { GeoIp } from './geoip.ts';
import { ExitLearner } from './learner.ts';

export { exitSharers } from './learner.ts';

export interface ExitDeps {
  readonly pool: Pool;
  readonly dispatchers: DispatcherCache;
  readonly logger: Logger;
  readonly registry: Registry;
  readonly now: () => number;
  readonly monotonic: () => number;
}

/**
 * The exit learner when ROTA_EXIT_IP_URL is set, else null. ROTA_GEOIP_DB is opened here, at start-up:
 * a file that cannot be read, or is not an MMDB file, stops start-up with its reason.
 */
export function createExitLearner(config: Config, d: ExitDeps): ExitLearner | null {
  if (config.exitIpUrl === null) return null;
  let geo: GeoIp | null = null;
  if (config.geoipDb !== null) {
    try {
      geo = new GeoIp(config.geoipDb);
    } catch (err) {
      throw new Error(
        `ROTA_GEOIP_DB: cannot read ${config.geoipDb} as a MaxMind DB (${(err as Error).message})`,
      );
    }
  }
  return new ExitLearner({
    ...d,
    url: config.exitIpUrl,
    geo,
    timeoutMs: Math.min(config.timeoutS, 10) * 1000,
  });
}
