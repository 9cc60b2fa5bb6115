import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { test } from 'node:test';

/*
 * The import rules of the house, over every module of src/ (tests included):
 * - the doors (http/ for the API, forward/ for the listeners) sit on top: no module below them imports
 *   from either, and neither door imports from the other; only the composition roots (app.ts, services.ts,
 *   serve.ts, main.ts and their siblings at src/'s top) join them;
 * - errors/ (the one registry of error codes) imports nothing of Rota's but itself.
 * docs/architecture.md draws the rooms.
 */

const SRC = join(import.meta.dirname, '..', 'src');
const DOORS = ['http', 'forward'];

function modules(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
}

/** The src-relative paths `file` imports (static and dynamic), for relative specifiers only. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
    out.push(relative(SRC, normalize(join(dirname(file), m[1] ?? ''))));
  }
  return out;
}

const room = (srcPath: string) => (srcPath.includes('/') ? (srcPath.split('/')[0] ?? '') : '');

test('no module below the doors imports from http/ or forward/, nor one door from the other', () => {
  const broken: string[] = [];
  const files = modules(SRC);
  assert.ok(files.length > 200, 'the whole of src/ is read');
  for (const file of files) {
    const from = relative(SRC, file);
    const fromRoom = room(from);
    if (fromRoom === '') continue; // a composition root
    for (const to of importsOf(file)) {
      const toRoom = room(to);
      if (DOORS.includes(toRoom) && toRoom !== fromRoom) broken.push(`${from} → ${to}`);
    }
  }
  assert.deepEqual(broken, []);
});

test('errors/ imports nothing of Rota but itself', () => {
  const broken: string[] = [];
  for (const file of modules(join(SRC, 'errors'))) {
    for (const to of importsOf(file))
      if (room(to) !== 'errors') broken.push(`${relative(SRC, file)} → ${to}`);
  }
  assert.deepEqual(broken, []);
});

test('the check sees a broken rule (it is not vacuous)', () => {
  const probe = join(SRC, 'outbound', 'executor.ts');
  assert.ok(
    importsOf(probe).some((to) => room(to) === 'errors'),
    'executor.ts imports errors/',
  );
});
