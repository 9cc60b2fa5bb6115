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
export const Agent: typeof AgentClass = require('undici/lib/dispatcher/agent.js');
export type Agent = AgentClass;
export const Pool: typeof PoolClass = require('undici/lib/dispatcher/pool.js');
export type Pool = PoolClass;
