import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chooseCacheDir, ensurePrivateDir, pruneStaleCaches, STALE_CACHE_MS } from './compile-cache.ts';

const dir = mkdtempSync(join(tmpdir(), 'rota-cc-'));
const uid = process.getuid?.();
after(() => rmSync(dir, { recursive: true, force: true }));

test('the folder: per user under tmp by default, ROTA_COMPILE_CACHE a path or off', () => {
  assert.deepEqual(chooseCacheDir({}, 1000, '/tmp'), {
    kind: 'dir',
    path: '/tmp/rota-compile-cache-1000',
    explicit: false,
  });
  assert.deepEqual(chooseCacheDir({ ROTA_COMPILE_CACHE: ' /var/cache/rota ' }, 1000, '/tmp'), {
    kind: 'dir',
    path: '/var/cache/rota',
    explicit: true,
  });
  for (const off of ['off', 'OFF', 'false', '0', 'no'])
    assert.deepEqual(chooseCacheDir({ ROTA_COMPILE_CACHE: off }, 1000), { kind: 'off' });
  for (const on of ['on', 'TRUE', '1', 'yes', ' '])
    assert.deepEqual(chooseCacheDir({ ROTA_COMPILE_CACHE: on }, 1000, '/tmp'), {
      kind: 'dir',
      path: '/tmp/rota-compile-cache-1000',
      explicit: false,
    });
});

test('a missing folder is made 0700; an existing private one is accepted', () => {
  const p = join(dir, 'new', 'cache');
  assert.deepEqual(ensurePrivateDir(p, uid), { ok: true });
  assert.equal(statSync(p).mode & 0o777, 0o700);
  assert.deepEqual(ensurePrivateDir(p, uid), { ok: true });
});

test('refused: writable by others, a symbolic link, a file, another owner', () => {
  const open = join(dir, 'open');
  mkdirSync(open);
  chmodSync(open, 0o777);
  assert.deepEqual(ensurePrivateDir(open, uid), { ok: false, why: 'writable by other users' });
  const group = join(dir, 'group');
  mkdirSync(group);
  chmodSync(group, 0o770);
  assert.deepEqual(ensurePrivateDir(group, uid), { ok: false, why: 'writable by other users' });
  const real = join(dir, 'real');
  mkdirSync(real, { mode: 0o700 });
  const link = join(dir, 'link');
  symlinkSync(real, link);
  assert.deepEqual(ensurePrivateDir(link, uid), { ok: false, why: 'not a folder' });
  const file = join(dir, 'file');
  writeFileSync(file, '');
  assert.equal(ensurePrivateDir(file, uid).ok, false);
  if (uid !== undefined) {
    assert.deepEqual(ensurePrivateDir(real, uid + 1), { ok: false, why: `owned by uid ${uid}` });
  }
});

test('in a process: enabled in the chosen folder; off leaves Node without a cache', () => {
  const url = new URL('./compile-cache.ts', import.meta.url).href;
  const script = `import m from 'node:module'; const { enableCompileCache } = await import(${JSON.stringify(url)});
    const s = enableCompileCache(); console.log(JSON.stringify({ s, dir: m.getCompileCacheDir() ?? null }));`;
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith('ROTA_') && !k.startsWith('NODE_COMPILE_CACHE'),
    ),
  );
  const run = (env: Record<string, string>) => {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('.', import.meta.url)),
      env: { ...inherited, ...env },
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as { s: { kind: string }; dir: string | null };
  };
  const at = join(dir, 'proc');
  const on = run({ ROTA_COMPILE_CACHE: at });
  assert.equal(on.s.kind, 'enabled');
  assert.ok(on.dir?.startsWith(at), `cache at ${on.dir}`);
  assert.deepEqual(run({ ROTA_COMPILE_CACHE: 'off' }), { s: { kind: 'off' }, dir: null });
  // Named by the operator: not Rota's own (never pruned). The default, under TMPDIR: Rota's own.
  assert.equal((on.s as { own?: boolean }).own, false);
  const tmp = join(dir, 'tmp');
  mkdirSync(tmp);
  const byDefault = run({ TMPDIR: tmp });
  assert.equal((byDefault.s as { own?: boolean }).own, true);
  assert.ok(byDefault.dir?.startsWith(join(tmp, `rota-compile-cache-${uid ?? 'user'}`)), `${byDefault.dir}`);
});

test('pruning: only in Rota own folder, only other subfolders untouched for 30 days', async () => {
  const root = join(dir, 'prune');
  const cur = join(root, 'v24.21.0-x64-aaaa-0');
  for (const name of ['v24.21.0-x64-aaaa-0', 'v22.1.0-x64-bbbb-0', 'v24.21.0-x64-cccc-0', 'keep-me'])
    mkdirSync(join(root, name), { recursive: true });
  const old = new Date(Date.now() - STALE_CACHE_MS - 60_000);
  for (const name of ['v24.21.0-x64-aaaa-0', 'v22.1.0-x64-bbbb-0', 'keep-me'])
    utimesSync(join(root, name), old, old);
  const named = { kind: 'enabled', dir: cur, own: false } as const;
  assert.deepEqual(await pruneStaleCaches(named), [], 'a folder the operator named is left alone');
  assert.deepEqual(await pruneStaleCaches({ ...named, own: true }), ['v22.1.0-x64-bbbb-0']);
  assert.deepEqual(readdirSync(root).sort(), ['keep-me', 'v24.21.0-x64-aaaa-0', 'v24.21.0-x64-cccc-0']);
  assert.deepEqual(await pruneStaleCaches({ kind: 'off' }), []);
});
