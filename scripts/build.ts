/*
 * The production build: `npm start` runs its output, `npm run dev` and the tests run the sources.
 *
 *   src/**.ts ──esbuild (bundle, node, ESM, packages external, split)──▶ dist/main.js + dist/chunks/ (+ maps)
 *   node_modules/redoc/bundles/redoc.standalone.js ──copy──▶ dist/assets/ (served at /redoc)
 *   node_modules/@fastify/swagger-ui/static/<the page's files> ──copy──▶ dist/assets/swagger-ui/ (at /docs)
 *
 * One bundled file parses and links faster than ~150 modules stripped of types at run time, and carries
 * no type-stripping cost. It is rebuilt only when a source is newer than it, so `npm start` after a
 * change always runs what is in src/, and otherwise starts at once.
 */
import { readFileSync } from 'node:fs';
import { copyFile, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(ROOT, 'dist', 'main.js');
const ASSETS = join(ROOT, 'dist', 'assets');
const BUNDLED = new Set(['typebox']);

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
  const sources = Math.max(await newest(join(ROOT, 'src')), (await stat(join(ROOT, 'package.json'))).mtimeMs);
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
    // Packages stay in node_modules, but for TypeBox: bundled, its builders are tree-shaken to the few
    // Rota calls, instead of ~300 ES modules loaded (3.3 MB of heap measured, and their start-up time).
    external: externals(),
    sourcemap: true,
    legalComments: 'none',
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
  const { buildBundle, isStale } = await import('../src/http/dashboard-assets.ts');
  if (await isStale()) await buildBundle(esbuild);
}

await main();
await buildWeb();
