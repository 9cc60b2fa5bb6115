import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

/*
 * scripts/prune-native.ts (the container's deps stage) on a copy of the installed better-sqlite3: only
 * the add-on this platform loads is left, and the pruned package still opens a database.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
let dir: string;
let pkg: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'rota-prune-'));
  pkg = join(dir, 'node_modules', 'better-sqlite3');
  cpSync(join(ROOT, 'node_modules', 'better-sqlite3'), pkg, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{"name":"prune-check","private":true}');
});

after(() => rmSync(dir, { recursive: true, force: true }));

test('prune-native keeps only the loaded add-on, and the package still works', () => {
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'prune-native.ts')], {
    cwd: dir,
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^prune-native: better-sqlite3 [\d.]+ MB -> [\d.]+ MB \(kept (prebuilds|build)\//);
  for (const gone of ['deps', 'src', 'binding.gyp']) assert.equal(existsSync(join(pkg, gone)), false, gone);
  const addons = ['prebuilds', 'build'].flatMap((d) =>
    existsSync(join(pkg, d))
      ? readdirSync(join(pkg, d), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.node'))
      : [],
  );
  assert.equal(addons.length, 1, `one add-on left, found ${addons.join(', ')}`);
  // The script opened a database itself; a fresh process must be able to as well.
  const check = spawnSync(
    process.execPath,
    [
      '-e',
      "const D=require('better-sqlite3'); console.log(new D(':memory:').prepare('select 6*7 n').get().n)",
    ],
    { cwd: dir, encoding: 'utf8' },
  );
  assert.equal(check.stdout.trim(), '42', check.stderr);
});
