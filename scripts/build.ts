/*
 * The production build: `npm start` runs its output, `npm run dev` and the tests run the sources.
 *
 *   src/**.ts ──esbuild (bundle, node, ESM, packages external, split)──▶ dist/main.js + dist/chunks/ (+ maps)
 *   node_modules/redoc/bundles/redoc.standalone.js ──copy──▶ dist/assets/ (served at /redoc)
 *   node_modules/@fastify/swagger-ui/static/<the page's files> ──copy──▶ dist/assets/swagger-ui/ (at /docs)
 *
 * One bundled file parses and links faster than ~150 modules stripped of types at run time, and carries
 * no type-stripping cost; the packages of BUNDLED go in with it. It is rebuilt only when a source (or
 * package.json, or this script) is newer than it, so `npm start` after a change always runs what is in
 * src/, and otherwise starts at once.
 */

import { readFileSync } from 'node:fs';
import { copyFile, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lazyHttp2Plugin } from '../src/runtime/lazy-http2.ts';
import { trickOn } from '../src/runtime/tricks.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(ROOT, 'dist', 'main.js');
const ASSETS = join(ROOT, 'dist', 'assets');
/*
 * Packages bundled into dist/ (with what they import) rather than loaded from node_modules at run time:
 * one file parsed instead of ~400 found, read and compiled one by one (start-up 347 → 283 ms median in an
 * interleaved A/B of the two builds, 10 starts each; idle RSS 86.7 → 78.3 MB). Each was checked for what
 * a bundle breaks (__dirname, require.resolve, files read beside the code): @fastify/swagger reads its own
 * package.json by __dirname inside a try (unused: Rota sets the document's info), pino's worker paths
 * serve transports only (Rota logs to a destination). Left out: native or lazily loaded drivers
 * (better-sqlite3, pg, ioredis), the CLI's packages, and undici, which src/runtime/undici-agent.ts loads by
 * path with createRequire (bundling the rest of it would make two copies).
 */
const BUNDLED = new Set([
  'typebox',
  'fastify',
  '@fastify/cors',
  '@fastify/error',
  '@fastify/fast-json-stringify-compiler',
  '@fastify/rate-limit',
  '@fastify/swagger',
  'ajv',
  'ajv-formats',
  'find-my-way',
  'ipaddr.js',
  'pino',
  'prom-client',
  'secure-json-parse',
  'socks',
]);
/** Bundled CommonJS calls require() for Node's own modules: an ES module has none, so each file makes one. */
const REQUIRE_BANNER =
  "import { createRequire as __rotaCreateRequire } from 'node:module'; const require = __rotaCreateRequire(import.meta.url);";

async function newest(dir: string): Promise<number> {
  let latest = 0;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) latest = Math.max(latest, await newest(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts'))
      latest = Math.max(latest, (await stat(p)).mtimeMs);
  }
  return latest;
}

async function builtAt(): Promise<number> {
  try {
    return (await stat(OUT)).mtimeMs;
  } catch {
    return 0;
  }
}

/** Every dependency but the bundled ones (package.json, read at build time). */
function externals(): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  const names = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies });
  return names.filter((n) => !BUNDLED.has(n)).flatMap((n) => [n, `${n}/*`]);
}

async function main(): Promise<void> {
  // This script too: its BUNDLED list and its options shape dist/ as much as the sources do.
  const sources = Math.max(
    await newest(join(ROOT, 'src')),
    (await stat(join(ROOT, 'package.json'))).mtimeMs,
    (await stat(fileURLToPath(import.meta.url))).mtimeMs,
  );
  if ((await builtAt()) > sources && !process.argv.includes('--force')) return;
  let esbuild: typeof import('esbuild');
  try {
    esbuild = await import('esbuild');
  } catch {
    // A production install without dev tools runs the dist/ it was given (the container's build stage).
    // Said out loud: reaching here means the sources are newer than dist/ (or --force), so what runs is
    // not what src/ says (a dev tree whose dev dependencies went missing ran stale code silently).
    if ((await builtAt()) > 0) {
      process.stderr.write('build: esbuild is not installed; dist/ is older than src/ and runs as it is\n');
      return;
    }
    throw new Error(
      'dist/main.js is missing and esbuild is not installed: run npm ci (with dev dependencies)',
    );
  }
  await rm(join(ROOT, 'dist', 'chunks'), { recursive: true, force: true });
  await esbuild.build({
    entryPoints: [join(ROOT, 'src', 'main.ts')],
    outdir: join(ROOT, 'dist'),
    // Code behind a dynamic import() (the PostgreSQL and SQLite stores, Redis shared state, the
    // workers' primary) goes to chunks of its own: without splitting, esbuild inlines it and hoists its
    // package imports (pg, ioredis, better-sqlite3) to the top of main.js, loading them in every process.
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    // Packages stay in node_modules but for BUNDLED; TypeBox's builders, bundled, are tree-shaken to the
    // few Rota calls, instead of ~300 ES modules loaded (3.3 MB of heap measured, and their start-up time).
    external: externals(),
    sourcemap: true,
    legalComments: 'none',
    banner: { js: REQUIRE_BANNER },
    // runtime/lazy-http2.ts, unless ROTA_RUNTIME_OFF names it (read when the bundle is built).
    plugins: trickOn('lazy-http2') ? [lazyHttp2Plugin] : [],
    logLevel: 'warning',
  });
  await mkdir(ASSETS, { recursive: true });
  const require = createRequire(join(ROOT, 'package.json'));
  await copyFile(require.resolve('redoc/bundles/redoc.standalone.js'), join(ASSETS, 'redoc.standalone.js'));
  await copySwaggerUi(require);
  const chunks = await readdir(join(ROOT, 'dist', 'chunks'));
  let bytes = (await stat(OUT)).size;
  for (const c of chunks.filter((n) => n.endsWith('.js')))
    bytes += (await stat(join(ROOT, 'dist', 'chunks', c))).size;
  process.stderr.write(
    `build: dist/main.js (${(bytes / 1024).toFixed(0)} KiB with its ${chunks.length / 2} chunks)\n`,
  );
}

/** Swagger UI's files, from the package a production install does not carry (src/http/swagger-ui.ts). */
async function copySwaggerUi(require: NodeJS.Require): Promise<void> {
  const { SWAGGER_UI_BUILT, SWAGGER_UI_FILES } = await import('../src/http/swagger-ui.ts');
  const from = join(dirname(require.resolve('@fastify/swagger-ui')), 'static');
  const to = join(ROOT, SWAGGER_UI_BUILT);
  await rm(to, { recursive: true, force: true });
  await mkdir(to, { recursive: true });
  for (const name of Object.keys(SWAGGER_UI_FILES)) await copyFile(join(from, name), join(to, name));
}

/** The dashboard's bundle (web/ → web/dist), served by the same process: built when stale. */
async function buildWeb(): Promise<void> {
  let esbuild: typeof import('esbuild');
  try {
    esbuild = await import('esbuild');
  } catch {
    return; // a production install serves the web/dist it was given
  }
  const { buildBundle, isStale } = await import('./web-bundle.ts');
  if (await isStale()) await buildBundle(esbuild);
}

await main();
await buildWeb();
