/**
 * The process entry (`npm start` runs its build, dist/main.js). It first makes sure the process has the
 * runtime flags Rota was measured with (lib/node-flags.ts re-executes it in place when they are
 * missing), and only then loads the server (serve.ts), so a re-executed process has loaded nothing twice.
 */
import { ensureNodeFlags } from './lib/node-flags.ts';

ensureNodeFlags();
await import('./serve.ts');
