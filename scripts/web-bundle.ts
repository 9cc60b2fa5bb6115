/**
 * Builds the dashboard bundle: web/src → web/dist (dashboard.html, .js, .css) with esbuild. Build time
 * only (scripts/build-web.ts, scripts/build.ts): the server never builds nor writes; it serves the
 * web/dist it was given (src/http/dashboard-assets.ts).
 */
import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type * as Esbuild from 'esbuild';
import {
  DIST_DIR,
  HTML_SOURCE,
  OUTPUT_NAMES,
  type OutputName,
  ROOT,
  SOURCE_DIR,
} from '../src/http/dashboard-assets.ts';

/** Changing how the bundle is built makes it stale too. */
const BUILD_INPUTS = [join(ROOT, 'scripts', 'web-bundle.ts')];

/** The esbuild options. */
export function buildOptions(): Esbuild.BuildOptions {
  return {
    absWorkingDir: ROOT,
    entryPoints: [
      { in: join(SOURCE_DIR, 'main.ts'), out: 'dashboard' },
      { in: join(SOURCE_DIR, 'dashboard.css'), out: 'dashboard' },
    ],
    outdir: DIST_DIR,
    bundle: true,
    minify: true,
    format: 'iife',
    target: ['es2022'],
    charset: 'utf8',
    legalComments: 'eof',
    write: false,
    logLevel: 'silent',
  };
}

async function newestMtime(paths: string[]): Promise<number> {
  let newest = 0;
  for (const p of paths) {
    const s = await stat(p).catch(() => null);
    if (s?.isDirectory()) {
      const names = await readdir(p);
      newest = Math.max(newest, await newestMtime(names.map((n) => join(p, n))));
    } else if (s) newest = Math.max(newest, s.mtimeMs);
  }
  return newest;
}

/** Oldest output's mtime, or null when one is missing. */
async function builtAt(): Promise<number | null> {
  let oldest = Number.POSITIVE_INFINITY;
  for (const name of OUTPUT_NAMES) {
    const s = await stat(join(DIST_DIR, name)).catch(() => null);
    if (!s) return null;
    oldest = Math.min(oldest, s.mtimeMs);
  }
  return oldest;
}

/** True when web/dist is missing, or older than a source (a production image without web/src is not). */
export async function isStale(): Promise<boolean> {
  const built = await builtAt();
  if (built === null) return true;
  return (await newestMtime([SOURCE_DIR, ...BUILD_INPUTS])) > built;
}

/**
 * Builds and writes web/dist. Each file is written beside its target and renamed over it, so that a
 * reader (another Rota process, a concurrent build) never sees half a file.
 */
export async function buildBundle(esbuild: Pick<typeof Esbuild, 'build'>): Promise<Map<OutputName, Buffer>> {
  const result = await esbuild.build(buildOptions());
  const out = new Map<OutputName, Buffer>([['dashboard.html', await readFile(HTML_SOURCE)]]);
  for (const f of result.outputFiles ?? []) {
    const name = OUTPUT_NAMES.find((n) => f.path === join(DIST_DIR, n));
    if (name) out.set(name, Buffer.from(f.contents));
  }
  await mkdir(DIST_DIR, { recursive: true });
  for (const name of OUTPUT_NAMES) {
    const bytes = out.get(name);
    if (!bytes) throw new Error(`esbuild produced no ${name}`);
    const path = join(DIST_DIR, name);
    const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
    await writeFile(tmp, bytes);
    await rename(tmp, path);
  }
  return out;
}
