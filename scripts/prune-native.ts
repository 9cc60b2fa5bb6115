/*
 * Prunes a production node_modules down to what runs, for the container image (Dockerfile, deps stage).
 *
 *   node_modules/better-sqlite3 (~27 MB: the SQLite C sources, the add-on's C++ sources, and prebuilt
 *   add-ons for eight platforms) ──▶ lib/ + the one add-on this platform loads (~2.3 MB)
 *
 * Which add-on runs is asked of the package itself (its lib/binding.js: a compiled build/Release one if
 * node-gyp made it, else the prebuild for this platform and libc), and the pruned package is opened
 * afterwards: an in-memory database must work, or the build fails here rather than at run time.
 * Run from the folder that holds node_modules: `node scripts/prune-native.ts`.
 */
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const require = createRequire(join(process.cwd(), 'package.json'));
const pkg = resolve('node_modules', 'better-sqlite3');

function bytes(path: string): number {
  const s = statSync(path);
  if (!s.isDirectory()) return s.size;
  return readdirSync(path).reduce((n, e) => n + bytes(join(path, e)), 0);
}

/** The add-on file better-sqlite3 loads on this machine, as its own lookup finds it. */
function loadedAddon(): string {
  for (const kind of ['Debug', 'Release']) {
    const built = join(pkg, 'build', kind, 'better_sqlite3.node');
    if (existsSync(built)) return built;
  }
  const binding = require(join(pkg, 'lib', 'binding.js')) as { getPrebuildPath: () => string | null };
  const prebuilt = binding.getPrebuildPath();
  if (prebuilt === null) throw new Error('better-sqlite3 has neither a compiled nor a prebuilt add-on here');
  return prebuilt;
}

function prune(keep: string): void {
  for (const dir of ['deps', 'src']) rmSync(join(pkg, dir), { recursive: true, force: true });
  rmSync(join(pkg, 'binding.gyp'), { force: true });
  for (const dir of ['prebuilds', 'build']) {
    const root = join(pkg, dir);
    if (!existsSync(root)) continue;
    // Everything under it but the add-on kept (and the folders on its path).
    const walk = (d: string): void => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = join(d, e.name);
        if (p === keep) continue;
        if (e.isDirectory() && keep.startsWith(`${p}/`)) walk(p);
        else rmSync(p, { recursive: true, force: true });
      }
    };
    walk(root);
  }
}

const before = bytes(pkg);
const keep = loadedAddon();
prune(keep);
const Database = require('better-sqlite3') as new (
  f: string,
) => { prepare: (s: string) => { get: () => unknown } };
const row = new Database(':memory:').prepare('select 41 + 1 as n').get() as { n: number };
if (row.n !== 42) throw new Error('better-sqlite3 does not work after pruning');
const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
process.stdout.write(
  `prune-native: better-sqlite3 ${mb(before)} MB -> ${mb(bytes(pkg))} MB (kept ${keep.slice(pkg.length + 1)})\n`,
);
