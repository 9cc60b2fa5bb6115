/**
 * The process entry (`npm start` runs its build, dist/main.js). It first makes sure the process has the
 * runtime flags Rota was measured with (lib/node-flags.ts re-executes it in place when they are
 * missing), keeps the shape of process.nextTick's queue entries alive (lib/tick-shape.ts: a V8 feedback
 * trap that made every stream operation slower), turns on the compile cache (lib/compile-cache.ts: V8's
 * code for the modules, kept between runs), and only then loads the server (serve.ts), so a re-executed
 * process has loaded nothing twice and every module of the server can come from the cache.
 */
import { enableCompileCache } from './lib/compile-cache.ts';
import { ensureNodeFlags } from './lib/node-flags.ts';
import { keepTickShape } from './lib/tick-shape.ts';

ensureNodeFlags();
keepTickShape();
enableCompileCache();
await import('./serve.ts');
