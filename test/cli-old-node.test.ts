/**
 * `rota` on a machine whose own Node is older than the CLI needs (issue 36): this machine's system Node
 * (/usr/bin/node, 20) runs bin/rota, which runs itself again through scripts/with-node.sh (the Node 24 in
 * .tools/, as `npm start` uses). Checked: `npx rota` and `node bin/rota` from another folder, a relative
 * file name meaning the caller's file, stdout holding only the command's output (export | import), exit
 * codes passed through, a SIGTERM to `rota` reaching the command it runs.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { GENEROUS_LIMITS } from './helpers/app.ts';
import { freePort } from './helpers/real-proxies.ts';
import { type RunningServer, startServer } from './helpers/server.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin', 'rota');
const SYSTEM_NODE = '/usr/bin/node';
const KEY = 'old-node-key-0123456789abcdef';
const systemVersion = spawnSync(SYSTEM_NODE, ['--version'], { encoding: 'utf8' }).stdout?.trim() ?? '';
const [major = 0, minor = 0] = systemVersion.replace(/^v/, '').split('.').map(Number);
const old = major < 22 || (major === 22 && minor < 19);

let server: RunningServer;
const dir = mkdtempSync(join(tmpdir(), 'rota-old-node-'));

/** A user's shell: the system's PATH only (no .tools, no node_modules/.bin), in `dir`. */
function run(
  cmd: string,
  args: string[],
  input = '',
): Promise<{ code: number | null; out: string; err: string }> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ROTA_')));
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: dir,
      env: { ...base, PATH: '/usr/local/bin:/usr/bin:/bin', ROTA_URL: server.url, ROTA_API_KEY: KEY },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
    child.stdin.end(input);
  });
}

before(async () => {
  server = await startServer({ ...GENEROUS_LIMITS, ROTA_REQUIRE_AUTH: 'true', ROTA_API_KEY: KEY });
});

after(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('rota under the system Node', { skip: old ? false : `${SYSTEM_NODE} is ${systemVersion}` }, () => {
  test('the system Node is too old for the CLI itself: bin/rota runs it through with-node.sh', async () => {
    // The CLI's TypeScript does not load under it at all: the relaunch is what makes `rota` work.
    const direct = spawnSync(SYSTEM_NODE, [join(ROOT, 'src', 'cli', 'main.ts'), '--version'], {
      encoding: 'utf8',
    });
    assert.notEqual(direct.status, 0);
    const version = await run(SYSTEM_NODE, [BIN, '--version']);
    assert.equal(version.code, 0, version.err);
    assert.match(version.out, /^\d+\.\d+\.\d+\n$/);
    assert.doesNotMatch(version.err, /needs Node\.js/);
  });

  test('npx rota works from the repository as the README says', async () => {
    const r = spawnSync('/usr/bin/npx', ['--no-install', 'rota', 'status', '--json'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, PATH: '/usr/local/bin:/usr/bin:/bin', ROTA_URL: server.url, ROTA_API_KEY: KEY },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(typeof (JSON.parse(r.stdout) as object), 'object');
  });

  test("a relative file is the caller's; stdout is the command's own; exit codes pass through", async () => {
    writeFileSync(join(dir, 'list.txt'), '10.40.0.1:3128\n10.40.0.2:3128\nnot-a-proxy\n');
    const imported = await run(SYSTEM_NODE, [BIN, 'proxies', 'import', 'list.txt']);
    assert.equal(imported.code, 1, 'an invalid line is a partial failure (exit 1)');
    assert.match(imported.out, /created 2, duplicates 0, invalid 1/);
    const exported = await run(SYSTEM_NODE, [BIN, 'proxies', 'export', '--with-credentials']);
    assert.equal(exported.code, 0, exported.err);
    const lines = exported.out.trim().split('\n');
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as { url: string }).url),
      ['http://10.40.0.1:3128', 'http://10.40.0.2:3128'],
    );
    const again = await run(SYSTEM_NODE, [BIN, 'proxies', 'import', '-'], exported.out);
    assert.equal(again.code, 0, again.err);
    assert.match(again.out, /created 0, duplicates 2, invalid 0/);
    const usage = await run(SYSTEM_NODE, [BIN, 'frobnicate']);
    assert.equal(usage.code, 2);
  });

  test('a SIGTERM to rota stops the command it runs (a supervisor stopping `rota serve`)', async (t) => {
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ROTA_')));
    const port = await freePort();
    const child = spawn(SYSTEM_NODE, [BIN, 'serve'], {
      cwd: dir,
      env: {
        ...base,
        PATH: '/usr/local/bin:/usr/bin:/bin',
        ROTA_PORT: String(port),
        ROTA_PROXY_PORT: '0',
        ROTA_SOCKS_PORT: '0',
        ROTA_LOG_LEVEL: 'warn',
      },
      stdio: 'ignore',
    });
    const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    const ready = () =>
      fetch(`http://127.0.0.1:${port}/api/v1/ready`).then(
        (r) => r.ok,
        () => false,
      );
    // Whatever happens, nothing this test started runs on: the child, and the server under it (taken
    // while it runs: once the child is gone an orphan is no longer found under it).
    let started: number[] = [];
    t.after(() => {
      for (const pid of started) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
    });
    let up = false;
    for (let i = 0; i < 300 && !up; i++) {
      up = await ready();
      if (!up) await new Promise((r) => setTimeout(r, 100));
    }
    started = descendants(child.pid ?? 0);
    assert.ok(up, 'rota serve answers /ready');
    child.kill('SIGTERM');
    assert.equal(await closed, 0, 'the server’s clean stop, its exit code passed through');
    let down = false;
    for (let i = 0; i < 50 && !down; i++) {
      down = !(await ready());
      if (!down) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(down, 'the server under it stopped too (before, it ran on as an orphan holding its ports)');
  });
});

/** `pid` and every process under it, now (read from /proc). */
function descendants(pid: number): number[] {
  if (pid === 0) return [];
  let kids: number[] = [];
  try {
    kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
  return [pid, ...kids.flatMap(descendants)];
}
