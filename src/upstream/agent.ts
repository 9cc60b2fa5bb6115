import { createRequire } from 'node:module';
import type { Agent as AgentClass, Pool as PoolClass } from 'undici';

/**
 * undici's Agent and Pool, loaded from their own modules rather than the package's index.
 *
 * Why: `import { Agent } from 'undici'` runs undici's index, which loads fetch, WebSocket, EventSource,
 * the cache and mock layers too: about 1.2 MB of source kept in the heap of every process, and 2.5 MB
 * more heap after a full GC than the Agent alone (measured with a last-resort GC in an empty process:
 * 8.7 vs 6.2 MB used). Rota's data paths call `dispatch()` on an Agent or a Pool and need nothing else.
 * The version is pinned exactly in package.json, so the internal paths cannot move under us; the tests
 * that send a request through every proxy kind would fail at once if they did.
 */
const require = createRequire(import.meta.url);
export type Agent = AgentClass;
export type Pool = PoolClass;

/*
 * Loaded on the first Agent or Pool made, not with this module: undici's client brings node:http2 with it
 * (its HTTP/2 client reads the module's constants as it loads), ~25 ms of start-up together, and a process
 * with no proxy used yet (a start with an empty pool, the workers' primary) needs neither.
 */
let agentClass: typeof AgentClass | undefined;
let poolClass: typeof PoolClass | undefined;

export function newAgent(options: AgentClass.Options): Agent {
  agentClass ??= require('undici/lib/dispatcher/agent.js') as typeof AgentClass;
  return new agentClass(options);
}

export function newPool(origin: string, options: PoolClass.Options): Pool {
  poolClass ??= require('undici/lib/dispatcher/pool.js') as typeof PoolClass;
  return new poolClass(origin, options);
}
