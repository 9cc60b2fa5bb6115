import { createRequire } from 'node:module';
import { trickOn } from './tricks.ts';

/**
 * node:http, taken with require() rather than an ES import (the `node-http` trick, runtime/tricks.ts).
 *
 * Why: the first ES import of a builtin makes Node build its ESM facade, which reads every export of the
 * module once. node:http's lazy `WebSocket`, `CloseEvent` and `MessageEvent` exports load the undici that
 * Node bundles for fetch: measured with --cpu-prof, ~40 ms of every start-up spent loading a library Rota
 * never calls (it has its own undici). require() returns the module object without reading its getters.
 * Types stay ordinary `import type` from node:http. internals.test.ts fails when an ES import no longer
 * loads Node's undici (the trick would then buy nothing).
 */
const require = createRequire(import.meta.url);
const http: typeof import('node:http') = trickOn('node-http')
  ? require('node:http')
  : await import('node:http');

export const { createServer, STATUS_CODES } = http;
