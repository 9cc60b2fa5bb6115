import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { decideFlags, missingFlags, NODE_FLAGS, type ReexecProcess } from './node-flags.ts';

const execve = (() => {
  throw new Error('not called in these tests');
}) as ReexecProcess['execve'];

function proc(o: Partial<ReexecProcess> = {}): ReexecProcess {
  return {
    execPath: '/usr/bin/node',
    execArgv: [],
    argv: ['/usr/bin/node', '/app/dist/main.js', 'serve'],
    env: {},
    execve,
    ...o,
  };
}

test('missing flags: all of them by default; a flag given by name (either spelling, any value) is kept', () => {
  assert.deepEqual(missingFlags([], undefined), [...NODE_FLAGS]);
  assert.deepEqual(missingFlags(['--max_semi_space_size=64'], '--expose-gc'), ['--heap-growing-percent=50']);
  assert.deepEqual(missingFlags([], ' --heap-growing-percent=20  --max-semi-space-size=8 --expose-gc '), []);
});

test('re-exec: the node binary, its own flags, the missing ones, then the script and its arguments', () => {
  const d = decideFlags(proc({ execArgv: ['--max-semi-space-size=32'], env: { HOME: '/h' } }));
  assert.equal(d.kind, 'reexec');
  if (d.kind !== 'reexec') return;
  assert.deepEqual(d.args, [
    '/usr/bin/node',
    '--max-semi-space-size=32',
    '--expose-gc',
    '--heap-growing-percent=50',
    '/app/dist/main.js',
    'serve',
  ]);
  assert.equal(d.env.HOME, '/h', 'the environment travels on');
});

test('no re-exec: flags complete, switched off, an IPC channel, already re-executed, or no execve', () => {
  assert.deepEqual(decideFlags(proc({ execArgv: [...NODE_FLAGS] })), { kind: 'keep', why: 'complete' });
  for (const off of ['off', 'false', '0', 'NO'])
    assert.deepEqual(decideFlags(proc({ env: { ROTA_NODE_FLAGS: off } })), { kind: 'keep', why: 'off' });
  assert.equal(decideFlags(proc({ env: { ROTA_NODE_FLAGS: 'on' } })).kind, 'reexec');
  const ipc = { send: () => true };
  assert.deepEqual(decideFlags(proc({ ...ipc, env: { NODE_UNIQUE_ID: '1' } })), { kind: 'keep', why: 'ipc' });
  assert.deepEqual(decideFlags(proc({ ...ipc, env: { WATCH_REPORT_DEPENDENCIES: '1' } })), {
    kind: 'keep',
    why: 'ipc',
  });
  assert.deepEqual(decideFlags(proc(ipc)), { kind: 'unsupported', missing: [...NODE_FLAGS], why: 'ipc' });
  const first = decideFlags(proc());
  assert.equal(first.kind, 'reexec');
  if (first.kind === 'reexec')
    assert.deepEqual(decideFlags(proc({ env: first.env })), { kind: 'keep', why: 'reexecuted' });
  const { execve: _, ...noExecve } = proc();
  assert.deepEqual(decideFlags(noExecve), {
    kind: 'unsupported',
    missing: [...NODE_FLAGS],
    why: 'no-execve',
  });
});

test('a real process re-executes itself in place: same pid, the flags in effect, arguments kept', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rota-flags-'));
  try {
    const script = join(dir, 'entry.ts');
    const lib = fileURLToPath(new URL('./node-flags.ts', import.meta.url));
    writeFileSync(
      script,
      [
        `import { ensureNodeFlags } from ${JSON.stringify(lib)};`,
        'ensureNodeFlags();',
        'console.log(JSON.stringify({ pid: process.pid, execArgv: process.execArgv,',
        '  argv: process.argv.slice(2), gc: typeof globalThis.gc }));',
      ].join('\n'),
    );
    const run = (env: NodeJS.ProcessEnv) => {
      const r = spawnSync(process.execPath, [script, 'a', '--b'], {
        env: { ...process.env, ...env },
        encoding: 'utf8',
      });
      assert.equal(r.status, 0, r.stderr);
      const out = JSON.parse(r.stdout) as { execArgv: string[]; argv: string[]; gc: string; pid: number };
      assert.equal(out.pid, r.pid, 'the same process, not a child');
      return out;
    };
    const on = run({ NODE_OPTIONS: '', ROTA_NODE_FLAGS: '' });
    assert.deepEqual(on.execArgv, [...NODE_FLAGS]);
    assert.deepEqual(on.argv, ['a', '--b']);
    assert.equal(on.gc, 'function', '--expose-gc took effect');
    const off = run({ NODE_OPTIONS: '', ROTA_NODE_FLAGS: 'off' });
    assert.deepEqual(off.execArgv, []);
    assert.equal(off.gc, 'undefined');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('npm start and the container pass exactly these flags, so that neither re-executes', () => {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const started = /exec node ((?:--\S+ )*)dist\/main\.js/.exec(pkg.scripts.start);
  assert.ok(started, `package.json start runs dist/main.js: ${pkg.scripts.start}`);
  assert.deepEqual(started[1]?.trim().split(' '), [...NODE_FLAGS]);
  const cmd = /^CMD (\[.*\])$/m.exec(readFileSync(join(root, 'Dockerfile'), 'utf8'));
  assert.ok(cmd, 'the Dockerfile has a CMD in exec form');
  assert.deepEqual(JSON.parse(cmd[1] ?? '[]'), ['node', ...NODE_FLAGS, 'dist/main.js']);
  assert.deepEqual(missingFlags([...NODE_FLAGS], undefined), [], 'given so, none is missing');
});
