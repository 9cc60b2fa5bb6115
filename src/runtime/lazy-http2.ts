/**
 * The `lazy-http2` trick (runtime/tricks.ts), applied when the production bundle is built
 * (scripts/build.ts): fastify/lib/server.js requires node:http2 as it loads, for its `http2` option,
 * which Rota never sets. Node's HTTP/2 modules cost ~17 ms of every start (require('node:http2') after
 * node:http in a fresh process, this machine). In the bundle, fastify gets an object that loads the
 * module on first use. production-build.test.ts checks that a started Rota has not loaded it;
 * internals.test.ts fails when fastify no longer requires it as it loads (the trick would buy nothing).
 *
 * Written against the shape of an esbuild plugin, not its types: nothing in src/ imports esbuild.
 */
const LAZY_HTTP2 =
  "let real; module.exports = new Proxy({}, { get: (_t, key) => (real ??= require('node:http2'))[key] });";

interface PluginBuild {
  onResolve(
    o: { filter: RegExp },
    cb: (a: { importer: string }) => { path: string; namespace: string } | undefined,
  ): void;
  onLoad(o: { filter: RegExp; namespace: string }, cb: () => { contents: string; loader: 'js' }): void;
}

export const lazyHttp2Plugin = {
  name: 'lazy-http2',
  setup(b: PluginBuild): void {
    b.onResolve({ filter: /^(node:)?http2$/ }, (a) =>
      a.importer.includes('/node_modules/fastify/') ? { path: 'http2', namespace: 'rota-lazy' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'rota-lazy' }, () => ({ contents: LAZY_HTTP2, loader: 'js' }));
  },
};
