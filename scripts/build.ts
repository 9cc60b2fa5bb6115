/*
 * The production build: `npm start` runs its output, `npm run dev` and the tests run the sources.
 *
 *   src/**.ts ──esbuild (bundle, node, ESM, packages external)──▶ dist/main.js (+ source map)
 *   node_modules/redoc/bundles/redoc.standalone.js ──copy──▶ dist/assets/ (served at /redoc)
 *
 * One bundled file parses and links faster than ~150 modules stripped of types at run time, and carries
 * no type-stripping cost. It is rebuilt only when a source is newer than it, so `npm start` after a
 * change always runs what is in src/, and otherwise starts at once.
 */
import { copyFile, mkdir, readdir, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(ROOT, 'dist', 'main.js');
const ASSETS = join(ROOT, 'dist', 'assets');

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

async function main(): Promise<void> {
  const sources = Math.max(await newest(join(ROOT, 'src')), (await stat(join(ROOT, 'package.json'))).mtimeMs);
  if ((await builtAt()) > sources && !process.argv.includes('--force')) return;
  let esbuild: typeof import('esbuild');
  try {
    esbuild = await import('esbuild');
  } catch {
    // A production install without dev tools runs the dist/ it was given (the container's build stage).
    if ((await builtAt()) > 0) return;
    throw new Error(
      'dist/main.js is missing and esbuild is not installed: run npm ci (with dev dependencies)',
    );
  }
  await esbuild.build({
    entryPoints: [join(ROOT, 'src', 'main.ts')],
    outfile: OUT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    packages: 'external',
    sourcemap: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  await mkdir(ASSETS, { recursive: true });
  const require = createRequire(join(ROOT, 'package.json'));
  await copyFile(require.resolve('redoc/bundles/redoc.standalone.js'), join(ASSETS, 'redoc.standalone.js'));
  process.stderr.write(`build: dist/main.js (${((await stat(OUT)).size / 1024).toFixed(0)} KiB)\n`);
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
