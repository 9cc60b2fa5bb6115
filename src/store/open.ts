import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { MemoryStore } from './memory.ts';
import type { ProxyStore } from './types.ts';

/** Picks the backend from the config. */
export function openStore(_config: Config, _logger: Logger): ProxyStore {
  return new MemoryStore();
}
