import { createRequire } from 'node:module';
import type { Agent as AgentClass, Pool as PoolClass } from 'undici';
import { trickOn } from './tricks.ts';

/**
 * undici's Agent and Pool, loaded from their own modules rather than the package's index.
 *
 * Why: `import { Agent } from 'undici'` runs undici's index, which loads fetch, WebSocket, EventSource,
 * the cache and mock layers too: about 1.2 MB of source kept in the heap of every process, and 2.5 MB
 * more heap after a full GC than the Agent alone (measured with a last-resort GC in an empty process:
 * 8.7 vs 6.2 MB used). Rota's data paths call `dispatch()` on an Agent or a Pool and need nothing else.
 * The version is pinned exactly in package.json; internals.test.ts fails at once if the paths stop being
 * undici's own Agent and Pool. The `undici-agent` trick (runtime/tricks.ts).
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
  agentClass ??= trickOn('undici-agent')
    ? (require('undici/lib/dispatcher/agent.js') as typeof AgentClass)
    : (require('undici') as typeof import('undici')).Agent;
  return new agentClass(options);
}

export function newPool(origin: string, options: PoolClass.Options): Pool {
  poolClass ??= trickOn('undici-agent')
    ? (require('undici/lib/dispatcher/pool.js') as typeof PoolClass)
    : (require('undici') as typeof import('undici')).Pool;
  return new poolClass(origin, options);
}
