/**
 * The dashboard's bundle as served: the prebuilt web/dist (dashboard.html, .js, .css; built by
 * `npm run build:web`, `npm start` and `npm test` through scripts/web-bundle.ts), held in memory raw and
 * gzipped. The server only reads: it never builds nor writes into its install folder. A missing bundle is
 * a 503 that says how to build it; a rebuilt one is picked up on the next page load (a few stats).
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzip as gzipCb } from 'node:zlib';
import { projectRoot } from '../lib/root.ts';

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

export interface Asset {
  readonly raw: Buffer;
  readonly gzipped: Buffer;
  readonly etag: string;
}

export type Bundle = { ok: true; assets: Record<OutputName, Asset> } | { ok: false; reason: string };

async function toAsset(raw: Buffer): Promise<Asset> {
  const etag = `"${createHash('sha256').update(raw).digest('base64url').slice(0, 22)}"`;
  return { raw, gzipped: await gzip(raw, { level: 9 }), etag };
}

/** The outputs' modification times, or null when one is missing. */
async function distStamp(dir: string): Promise<string | null> {
  const times: number[] = [];
  for (const name of OUTPUT_NAMES) {
    const s = await stat(join(dir, name)).catch(() => null);
    if (!s) return null;
    times.push(s.mtimeMs);
  }
  return times.join(',');
}

async function readDist(dir: string): Promise<Map<OutputName, Buffer> | null> {
  const out = new Map<OutputName, Buffer>();
  for (const name of OUTPUT_NAMES) {
    const bytes = await readFile(join(dir, name)).catch(() => null);
    if (!bytes) return null;
    out.set(name, bytes);
  }
  return out;
}

const NOT_BUILT =
  'The dashboard bundle (web/dist) is not built: run `npm run build:web` (or `npm start`, which builds it).';

/**
 * The bundle as served. `current()` checks web/dist's files (three stats) and reads them again when they
 * changed; one check at a time, every caller meanwhile waits for the same one.
 */
export class DashboardAssets {
  readonly #dir: string;
  #bundle: Bundle | null = null;
  #stamp: string | null = null;
  #pending: Promise<Bundle> | null = null;

  /** `dir`: where the built files are (web/dist). */
  constructor(dir: string = DIST_DIR) {
    this.#dir = dir;
  }

  /** The bundle, re-read first when web/dist changed (the page load calls this). */
  current(): Promise<Bundle> {
    this.#pending ??= this.#refresh().finally(() => {
      this.#pending = null;
    });
    return this.#pending;
  }

  /** The bundle as last read (the page's own assets call this right after the page). */
  async get(): Promise<Bundle> {
    if (this.#pending) return this.#pending;
    return this.#bundle?.ok ? this.#bundle : this.current();
  }

  async #refresh(): Promise<Bundle> {
    const stamp = await distStamp(this.#dir);
    if (this.#bundle !== null && stamp === this.#stamp) return this.#bundle;
    const files = stamp === null ? null : await readDist(this.#dir);
    this.#stamp = stamp;
    if (files === null) {
      this.#bundle = { ok: false, reason: NOT_BUILT };
      return this.#bundle;
    }
    const [html, js, css] = await Promise.all(OUTPUT_NAMES.map((n) => toAsset(files.get(n) as Buffer)));
    this.#bundle = {
      ok: true,
      assets: { 'dashboard.html': html as Asset, 'dashboard.js': js as Asset, 'dashboard.css': css as Asset },
    };
    return this.#bundle;
  }
}
