import { switchWord } from '../lib/switch-words.ts';

/**
 * Rota's runtime tricks. Each leans on an internal of Node, V8, undici or Fastify that a new version may
 * move, so they live together in this folder, each behind one switch, each with a test in
 * internals.test.ts that fails loudly when the internal it relies on moves (then the trick is either
 * mended or dropped: it must still pay for itself).
 *
 * | trick         | what it relies on                                          | what it buys                   |
 * |---------------|------------------------------------------------------------|--------------------------------|
 * | node-flags    | process.execve; V8 reads the semi-space cap at heap set-up | lower RSS peaks (node-flags.ts)|
 * | compile-cache | node:module's compile cache                                | start-up (compile-cache.ts)    |
 * | tick-shape    | nextTick's queue entries are async-hooked TickObjects       | CPU per stream op (tick-shape) |
 * | heap-trim     | --expose-gc's gc({type, flavor: 'last-resort'})            | idle RSS (heap-trim.ts)        |
 * | node-http     | an ES import of node:http reads its lazy undici getters    | start-up (node-http.ts)        |
 * | undici-agent  | undici/lib/dispatcher/{agent,pool}.js are undici's classes | heap, start-up (undici-agent)  |
 * | lazy-http2    | fastify/lib/server.js requires node:http2 as it loads      | start-up (lazy-http2.ts)       |
 * | head-order    | undici writes a request head as one latin1 string, host    | the client's header order      |
 * |               | second and connection third (client-h1.js)                 | upstream (head-order.ts)       |
 *
 * The switch: ROTA_RUNTIME_OFF, a comma list of tricks to leave out (or `all`), read once. node-flags
 * and compile-cache also keep their own words (ROTA_NODE_FLAGS=off, ROTA_COMPILE_CACHE=off). lazy-http2
 * is applied when the bundle is built (scripts/build.ts), so it is read then.
 */
export const TRICKS = [
  'node-flags',
  'compile-cache',
  'tick-shape',
  'heap-trim',
  'node-http',
  'undici-agent',
  'lazy-http2',
  'head-order',
] as const;
export type Trick = (typeof TRICKS)[number];

/** The tricks ROTA_RUNTIME_OFF leaves out; unknown names are ignored (a typo must not stop a start). */
export function tricksOff(value: string | undefined): ReadonlySet<Trick> {
  const words = (value ?? '')
    .split(',')
    .map((w) => w.trim().toLowerCase())
    .filter(Boolean);
  if (words.includes('all') || words.some((w) => switchWord(w) === 'off')) return new Set(TRICKS);
  return new Set(TRICKS.filter((t) => words.includes(t)));
}

let off: ReadonlySet<Trick> | null = null;

/** Whether `trick` is on in this process (ROTA_RUNTIME_OFF does not name it). */
export function trickOn(trick: Trick, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env !== process.env) return !tricksOff(env.ROTA_RUNTIME_OFF).has(trick);
  off ??= tricksOff(env.ROTA_RUNTIME_OFF);
  return !off.has(trick);
}
