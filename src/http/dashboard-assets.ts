/**
 * The dashboard's bundle: web/src → web/dist (dashboard.html, .js, .css), built with esbuild, held in
 * memory (raw and gzipped) for serving. One set of build options serves scripts/build-web.ts and the
 * server, which builds on demand when web/dist is missing or older than the sources (`npm run dev` and the
 * tests run src/ with no build step, and a changed web/src must not be served stale). esbuild runs in its own process, so a build never blocks the event loop; it is
 * imported only when a build is needed, so a production install without dev dependencies still serves a
 * prebuilt web/dist, or answers 503 with the reason.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzip as gzipCb } from 'node:zlib';
import { projectRoot } from '../lib/root.ts';

type Esbuild = typeof import('esbuild');

const gzip = promisify(gzipCb);

// Found by walking up (lib/root.ts): the same from src/ and from the production bundle in dist/.
export const ROOT = projectRoot();
export const WEB_DIR = join(ROOT, 'web');
export const SOURCE_DIR = join(WEB_DIR, 'src');
export const DIST_DIR = join(WEB_DIR, 'dist');
/** Copied as it is: the page's markup, with no inline script or style. */
export const HTML_SOURCE = join(SOURCE_DIR, 'dashboard.html');
export const OUTPUT_NAMES = ['dashboard.html', 'dashboard.js', 'dashboard.css'] as const;
export type OutputName = (typeof OUTPUT_NAMES)[number];
/**
 * Changing how the bundle is built makes it stale too. Named from the root, not import.meta.url, which is
 * dist/main.js in the production bundle (rebuilt on every change of src/); absent there, it is skipped.
 */
const BUILD_INPUTS = [join(ROOT, 'src', 'http', 'dashboard-assets.ts')];

export interface Asset {
  readonly raw: Buffer;
  readonly gzipped: Buffer;
  readonly etag: string;
}

export type Bundle = { ok: true; assets: Record<OutputName, Asset> } | { ok: false; reason: string };

/** The esbuild options shared by the build script and the server. */
export function buildOptions(): import('esbuild').BuildOptions {
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
export async function buildBundle(esbuild: Esbuild): Promise<Map<OutputName, Buffer>> {
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

async function toAsset(raw: Buffer): Promise<Asset> {
  const etag = `"${createHash('sha256').update(raw).digest('base64url').slice(0, 22)}"`;
  return { raw, gzipped: await gzip(raw, { level: 9 }), etag };
}

async function readDist(): Promise<Map<OutputName, Buffer> | null> {
  const out = new Map<OutputName, Buffer>();
  for (const name of OUTPUT_NAMES) {
    const bytes = await readFile(join(DIST_DIR, name)).catch(() => null);
    if (!bytes) return null;
    out.set(name, bytes);
  }
  return out;
}

async function loadEsbuild(): Promise<Esbuild | null> {
  try {
    return await import('esbuild');
  } catch {
    return null;
  }
}

type Built = { ok: true; files: Map<OutputName, Buffer> } | { ok: false; reason: string };

const NOT_BUILT =
  'The dashboard bundle (web/dist) is not built, and esbuild (a dev dependency) is not installed to ' +
  'build it: run `npm run build:web` where dev dependencies are installed.';

export interface DashboardAssetsOptions {
  /** Told about builds and about falling back to a stale bundle. */
  readonly log: { info(msg: string): void; warn(msg: string): void };
}

/**
 * The bundle as served. `current()` checks the sources (a few stats) and rebuilds when they changed; one
 * check or build at a time, every caller meanwhile waits for the same one.
 */
export class DashboardAssets {
  readonly #log: DashboardAssetsOptions['log'];
  #bundle: Bundle | null = null;
  #pending: Promise<Bundle> | null = null;
  readonly #warned = new Set<string>();

  constructor(opts: DashboardAssetsOptions) {
    this.#log = opts.log;
  }

  /** The bundle, brought up to date first (the page load calls this). */
  current(): Promise<Bundle> {
    this.#pending ??= this.#refresh().finally(() => {
      this.#pending = null;
    });
    return this.#pending;
  }

  /** The bundle as last built or read (the page's own assets call this right after the page). */
  async get(): Promise<Bundle> {
    if (this.#pending) return this.#pending;
    return this.#bundle?.ok ? this.#bundle : this.current();
  }

  async #refresh(): Promise<Bundle> {
    const stale = await isStale();
    if (this.#bundle?.ok && !stale) return this.#bundle;
    const files = await this.#buildOrRead(stale);
    if (!files.ok) {
      this.#bundle = files;
      return files;
    }
    const [html, js, css] = await Promise.all(OUTPUT_NAMES.map((n) => toAsset(files.files.get(n)!)));
    this.#bundle = {
      ok: true,
      assets: { 'dashboard.html': html!, 'dashboard.js': js!, 'dashboard.css': css! },
    };
    return this.#bundle;
  }

  async #buildOrRead(stale: boolean): Promise<Built> {
    const prebuilt = await readDist();
    if (!stale && prebuilt) return { ok: true, files: prebuilt };
    const esbuild = await loadEsbuild();
    if (!esbuild) {
      if (!prebuilt) return { ok: false, reason: NOT_BUILT };
      this.#warnOnce('dashboard: web/dist is older than web/src and esbuild is not installed; serving it');
      return { ok: true, files: prebuilt };
    }
    try {
      const started = performance.now();
      const files = await buildBundle(esbuild);
      this.#log.info(`dashboard: bundle built in ${Math.round(performance.now() - started)} ms`);
      return { ok: true, files };
    } catch (err) {
      const detail = `dashboard: the bundle failed to build: ${(err as Error).message}`;
      if (!prebuilt) {
        this.#log.warn(detail);
        return { ok: false, reason: 'The dashboard bundle failed to build (the server log says why).' };
      }
      this.#warnOnce(`${detail}; serving the previous web/dist`);
      return { ok: true, files: prebuilt };
    }
  }

  #warnOnce(msg: string): void {
    if (this.#warned.has(msg)) return;
    this.#warned.add(msg);
    this.#log.warn(msg);
  }
}
