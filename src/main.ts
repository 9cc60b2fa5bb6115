/**
 * The process entry (`npm start` runs its build, dist/main.js). It first makes sure the process has the
 * runtime flags Rota was measured with (runtime/node-flags.ts re-executes it in place when they are
 * missing), keeps the shape of process.nextTick's queue entries alive (runtime/tick-shape.ts: a V8 feedback
 * trap that made every stream operation slower), turns on the compile cache (runtime/compile-cache.ts: V8's
 * code for the modules, kept between runs), and only then loads the server (serve.ts), so a re-executed
 * process has loaded nothing twice and every module of the server can come from the cache. Each trick is
 * one of runtime/tricks.ts, behind its switch (ROTA_RUNTIME_OFF).
 */
import { enableCompileCache } from './runtime/compile-cache.ts';
import { ensureNodeFlags } from './runtime/node-flags.ts';
import { keepTickShape } from './runtime/tick-shape.ts';
import { trickOn } from './runtime/tricks.ts';

ensureNodeFlags();
if (trickOn('tick-shape')) keepTickShape();
enableCompileCache();
await import('./serve.ts');
