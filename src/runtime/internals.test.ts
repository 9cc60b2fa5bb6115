import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { TRICKS, trickOn, tricksOff } from './tricks.ts';

/*
 * For each runtime trick (tricks.ts), the internal of Node, V8, undici or Fastify it relies on. A test
 * here failing means that internal moved: mend the trick, or drop it if it no longer pays for itself.
 * (tick-shape and heap-trim have their premises in tick-shape.test.ts and heap-trim.test.ts, on real
 * processes; node-flags and compile-cache in theirs.)
 */

const require = createRequire(import.meta.url);

/** Runs `code` (an ES module) in a fresh Node and returns what it prints. */
function fresh(code: string, flags: string[] = []): string {
  return execFileSync(process.execPath, [...flags, '--input-type=module', '-e', code], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
  }).trim();
}

describe('the internals the runtime tricks rely on', () => {
  it('node-http: an ES import of node:http loads Node’s bundled undici; require() does not', () => {
    const probe = (load: string) =>
      fresh(
        `${load}; console.log(process.moduleLoadList.some((m) => m.includes('internal/deps/undici/undici')));`,
      );
    assert.equal(probe("await import('node:http')"), 'true', 'the cost the trick avoids is still there');
    assert.equal(
      probe("import { createRequire } from 'node:module'; createRequire(import.meta.url)('node:http')"),
      'false',
      'require() still avoids it',
    );
  });

  it('undici-agent: undici/lib/dispatcher/{agent,pool}.js are the Agent and Pool undici exports', () => {
    const undici = require('undici') as typeof import('undici');
    assert.equal(require('undici/lib/dispatcher/agent.js'), undici.Agent);
    assert.equal(require('undici/lib/dispatcher/pool.js'), undici.Pool);
  });

  it('lazy-http2: fastify requires node:http2 as its server module loads', () => {
    const server = readFileSync(require.resolve('fastify/lib/server.js'), 'utf8');
    assert.match(server, /require\('(node:)?http2'\)/);
    const server_ = JSON.stringify(require.resolve('fastify/lib/server.js'));
    const loaded = fresh(
      `import { createRequire } from 'node:module'; createRequire(import.meta.url)(${server_}); ` +
        "console.log(process.moduleLoadList.includes('NativeModule http2'));",
    );
    assert.equal(loaded, 'true', 'loading fastify’s server module loads node:http2');
  });

  it('head-order: undici writes a request head as one latin1 string, host second, connection third', () => {
    const h1 = readFileSync(require.resolve('undici/lib/dispatcher/client-h1.js'), 'utf8');
    assert.match(h1, /header \+= `host: \$\{host\}\\r\\n`/);
    assert.match(h1, /header \+= 'connection: keep-alive\\r\\n'/);
    assert.match(h1, /socket\.write\(`\$\{header\}\\r\\n`, 'latin1'\)/);
  });

  it('node-flags: process.execve exists (the re-exec in place)', () => {
    assert.equal(typeof (process as { execve?: unknown }).execve, 'function');
  });

  it('compile-cache: node:module has enableCompileCache and flushCompileCache', async () => {
    const m = await import('node:module');
    assert.equal(typeof m.enableCompileCache, 'function');
    assert.equal(typeof m.flushCompileCache, 'function');
  });

  it('heap-trim: --expose-gc’s gc takes the last-resort flavour', () => {
    const out = fresh("globalThis.gc({ type: 'major', flavor: 'last-resort' }); console.log('ok')", [
      '--expose-gc',
    ]);
    assert.equal(out, 'ok');
  });
});

describe('the one switch', () => {
  it('ROTA_RUNTIME_OFF names tricks to leave out, or all of them; unknown names are ignored', () => {
    assert.deepEqual([...tricksOff(undefined)], []);
    assert.deepEqual([...tricksOff('tick-shape, Heap-Trim,nonsense')].sort(), ['heap-trim', 'tick-shape']);
    assert.deepEqual([...tricksOff('all')].sort(), [...TRICKS].sort());
    assert.deepEqual([...tricksOff('off')].sort(), [...TRICKS].sort());
    assert.equal(trickOn('tick-shape', { ROTA_RUNTIME_OFF: 'tick-shape' }), false);
    assert.equal(trickOn('heap-trim', { ROTA_RUNTIME_OFF: 'tick-shape' }), true);
  });
});
