/**
 * The `rota` command as a real process (`node bin/rota ...`) against a real Rota (startServer) with auth
 * on: every command, `--json` output that parses, exit codes 0/1/2, `--help` everywhere, no credential
 * ever printed, and the progress bar only under a terminal (`script` gives the command a pseudo-terminal).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { GENEROUS_LIMITS } from './helpers/app.ts';
import { freePort, type RunningServer, startServer } from './helpers/server.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const KEY = 'cli-test-key-0123456789abcdef';
const SECRET = 'Cli-Pw-7731';
const BAR = /[\u2588\u2591]/;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

let server: RunningServer;
let target: TargetServer;
let proxy: ForwardProxy;
let deadPort: number;
const dir = mkdtempSync(join(tmpdir(), 'rota-cli-'));
/** Everything any run printed, for the credential check at the end. */
const printed: string[] = [];

function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ROTA_')));
  return { ...base, ROTA_URL: server.url, ROTA_API_KEY: KEY, ...extra };
}

/** Runs `node bin/rota ...args` with stdout and stderr as pipes. */
function rota(args: string[], opts: { env?: Record<string, string>; input?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/rota', ...args], {
      cwd: ROOT,
      env: cleanEnv(opts.env ?? {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString('utf8');
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => {
      printed.push(stdout, stderr);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** Runs the command under a pseudo-terminal (util-linux `script`); stdout and stderr arrive mixed. */
function underTerminal(args: string[]): Promise<Run> {
  const cmd = [process.execPath, 'bin/rota', ...args].map((a) => `'${a}'`).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-q', '-e', '-c', cmd, '/dev/null'], { cwd: ROOT, env: cleanEnv({}) });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => {
      printed.push(out);
      resolve({ code, stdout: out, stderr: '' });
    });
    child.stdin.end();
  });
}

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

before(async () => {
  [target, proxy, deadPort] = await Promise.all([startTarget(), startForwardProxy(), freePort()]);
  server = await startServer({
    ...GENEROUS_LIMITS,
    ROTA_REQUIRE_AUTH: 'true',
    ROTA_API_KEY: KEY,
    ROTA_SSRF_ALLOW: '127.0.0.0/8',
    ROTA_HEALTH_CHECK_URL: target.url('/json').href,
    ROTA_TIMEOUT: '3',
    ROTA_CONNECT_TIMEOUT_S: '1',
  });
});

after(async () => {
  await server?.stop();
  await Promise.all([target?.close(), proxy?.close()]);
  rmSync(dir, { recursive: true, force: true });
  const all = printed.join('\n');
  assert.ok(!all.includes(SECRET), 'no credential printed by any command');
  assert.ok(!all.includes(KEY), 'the API key is never printed');
});

describe('rota CLI', () => {
  test('--help for every command, exit 0', async () => {
    const commands = [
      [],
      ['serve'],
      ['proxies'],
      ['proxies', 'add'],
      ['proxies', 'list'],
      ['proxies', 'rm'],
      ['proxies', 'import'],
      ['proxies', 'export'],
      ['check'],
      ['status'],
    ];
    const runs = await Promise.all(commands.map((c) => rota([...c, '--help'])));
    runs.forEach((r, i) => {
      assert.equal(r.code, 0, `${commands[i]!.join(' ')} --help`);
      assert.match(r.stdout, new RegExp(`^Usage: rota ${commands[i]!.join(' ')}`.trimEnd()), r.stdout);
    });
    assert.match(runs[0]!.stdout, /proxies[\s\S]*check[\s\S]*status/);
    assert.match(runs[3]!.stdout, /--country[\s\S]*--weight[\s\S]*--tag[\s\S]*--json/);
  });

  test('bad usage exits 2 with commander or the CLI saying why', async () => {
    const cases: [string[], RegExp][] = [
      [[], /Usage: rota/],
      [['frobnicate'], /unknown command/],
      [['proxies', 'add'], /missing required argument/],
      [['proxies', 'add', 'http://10.0.0.1:80', '--weight', 'heavy'], /--weight/],
      [['proxies', 'add', 'http://10.0.0.1:80', '--country', 'Germany'], /country/],
      [['proxies', 'list', '--status', 'sleepy'], /Allowed choices/],
      [['proxies', 'list', '--page-size', '500'], /1 to 100/],
      [['proxies', 'list', '--bogus'], /unknown option/],
      [['proxies', 'import'], /missing required argument/],
      [['proxies', 'import', join(dir, 'no-such-file.txt')], /FILE_UNREADABLE/],
      [['status', '--url', 'ftp://nowhere'], /USAGE/],
    ];
    const runs = await Promise.all(cases.map(([args]) => rota(args)));
    runs.forEach((r, i) => {
      assert.equal(r.code, 2, `${cases[i]![0].join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, cases[i]![1]);
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack');
    });
  });

  test('proxies add, list, rm (tables and --json)', async () => {
    const added = await rota([
      'proxies',
      'add',
      `http://carol:${SECRET}@10.20.0.1:3128`,
      '--country',
      'de',
      '--tag',
      'x',
      '--tag',
      'y',
    ]);
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, /^ID\s+URL\s+LABEL\s+STATUS/);
    assert.match(
      added.stdout,
      /http:\/\/10\.20\.0\.1:3128\s+ca…\s+active\s+unknown\s+1\s+DE\s+yes\s+0\s+-\s+x,y/,
    );
    const asJson = await rota(['proxies', 'add', 'socks5://10.20.0.2:1080', '--weight', '2.5', '--json']);
    assert.equal(asJson.code, 0);
    const created = JSON.parse(asJson.stdout) as { id: string; weight: number; url: string };
    assert.deepEqual([created.url, created.weight], ['socks5://10.20.0.2:1080', 2.5]);
    const dup = await rota(['proxies', 'add', `http://carol:${SECRET}@10.20.0.1:3128`]);
    assert.equal(dup.code, 1);
    assert.match(dup.stderr, /^PROXY_ALREADY_EXISTS: /);
    const bad = await rota(['proxies', 'add', 'http://10.20.0.3']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^INVALID_PROXY_FORMAT: .*missing port/);

    const list = await rota(['proxies', 'list', '--page-size', '1']);
    assert.equal(list.code, 0);
    assert.equal(list.stdout.trim().split('\n').length, 2, 'a header and one row');
    assert.match(list.stderr, /page 1 of 2, 2 proxies/);
    const page = JSON.parse((await rota(['--json', 'proxies', 'list'])).stdout) as {
      items: { id: string }[];
      total: number;
    };
    assert.equal(page.total, 2);
    const filtered = JSON.parse((await rota(['proxies', 'list', '--status', 'dead', '--json'])).stdout) as {
      total: number;
    };
    assert.equal(filtered.total, 0);

    const rm = await rota(['proxies', 'rm', ...page.items.map((i) => i.id)]);
    assert.equal(rm.code, 0, rm.stderr);
    assert.equal(rm.stdout.trim().split('\n').length, 2);
    const missing = await rota(['proxies', 'rm', created.id, '--json']);
    assert.equal(missing.code, 1);
    assert.deepEqual(JSON.parse(missing.stdout).failed[0].code, 'PROXY_NOT_FOUND');
  });

  test('proxies import (text, NDJSON, stdin) and export', async () => {
    const text = file(
      'list.txt',
      `# mine\n10.30.0.1:3128\n10.30.0.2:3128:dave:${SECRET}\nnot-a-proxy\n10.30.0.1:3128\n`,
    );
    const r = await rota(['proxies', 'import', text, '--protocol', 'socks5']);
    assert.equal(r.code, 1, 'an invalid line is a partial failure');
    assert.match(r.stdout, /created 2, duplicates 1, invalid 1/);
    assert.match(r.stdout, /LINE\s+REASON\n4\s+expected/);
    assert.doesNotMatch(r.stderr, BAR, 'no progress bar in a pipe');
    const nd = file('list.ndjson', `${JSON.stringify({ url: 'http://10.30.0.3:80', country: 'fr' })}\n`);
    const ndRun = await rota(['proxies', 'import', nd, '--json']);
    assert.equal(ndRun.code, 0);
    assert.deepEqual(JSON.parse(ndRun.stdout), { created: 1, duplicates: 0, invalid: [], invalid_count: 0 });
    const stdin = await rota(['proxies', 'import', '-'], { input: 'http://10.30.0.4:80\n' });
    assert.equal(stdin.code, 0, stdin.stderr);
    assert.match(stdin.stdout, /created 1, duplicates 0, invalid 0/);

    const exported = await rota(['proxies', 'export']);
    assert.equal(exported.code, 0);
    const lines = exported.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { url: string; country: string | null });
    assert.deepEqual(
      lines.map((l) => l.url),
      ['socks5://10.30.0.1:3128', 'socks5://10.30.0.2:3128', 'http://10.30.0.3:80', 'http://10.30.0.4:80'],
    );
    const healthy = await rota(['proxies', 'export', '--status', 'healthy']);
    assert.equal(healthy.stdout, '');
  });

  test('the progress bar shows under a terminal only', async () => {
    const text = file(
      'tty.txt',
      Array.from({ length: 300 }, (_, i) => `10.40.${i >> 8}.${i & 255}:8080`).join('\n'),
    );
    const tty = await underTerminal(['proxies', 'import', text]);
    assert.equal(tty.code, 0, tty.stdout);
    assert.match(tty.stdout, BAR, 'the bar is drawn');
    assert.match(tty.stdout, /Uploading \|/);
    assert.match(tty.stdout, /created 300/);
    const piped = await rota(['proxies', 'import', text]);
    assert.doesNotMatch(piped.stdout + piped.stderr, BAR);
    assert.match(piped.stdout, /duplicates 300/);
  });

  test('check: exit 0 when every proxy works, 1 when one fails; status', async () => {
    const everyId = (await rota(['proxies', 'export'])).stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { id: string }).id);
    assert.equal((await rota(['proxies', 'rm', ...everyId])).code, 0);
    const good = JSON.parse(
      (await rota(['proxies', 'add', `http://127.0.0.1:${proxy.port}`, '--json'])).stdout,
    );
    const unchecked = await rota(['status']);
    assert.match(unchecked.stdout, /pool\s+1 proxies: .*none checked yet/, 'never "100% healthy" unchecked');
    const ok = await rota(['check']);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, /working/);
    assert.match(ok.stderr, /1 checked: 1 working, 0 failed/);
    const dead = JSON.parse(
      (await rota(['proxies', 'add', `http://127.0.0.1:${deadPort}`, '--json'])).stdout,
    );
    const failed = await rota(['check', '--json']);
    assert.equal(failed.code, 1);
    const results = JSON.parse(failed.stdout) as { proxy_id: string; status: string; url: string }[];
    assert.deepEqual(
      results.map((x) => [x.proxy_id, x.status]),
      [
        [good.id, 'working'],
        [dead.id, 'failed'],
      ],
    );
    const one = await rota(['check', good.id]);
    assert.equal(one.code, 0);
    const tty = await underTerminal(['check']);
    assert.match(tty.stdout, /Checking \|/);
    assert.match(tty.stdout, BAR);

    const status = await rota(['status']);
    assert.equal(status.code, 0);
    assert.match(status.stdout, /pool\s+2 proxies: .*50% healthy of 2 checked/);
    assert.match(status.stdout, /LISTENER\s+ENABLED/);
    const sj = JSON.parse((await rota(['status', '--json'])).stdout) as {
      status: { pool_stats: { total: number } };
      listeners: unknown[];
    };
    assert.equal(sj.status.pool_stats.total, 2);
    assert.equal(sj.listeners.length, 2);
  });

  test('a refused key and an unreachable server exit 1 with the code, never a stack', async () => {
    const wrong = await rota(['status'], { env: { ROTA_API_KEY: 'wrong-key' } });
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /^UNAUTHORIZED: /);
    const down = await rota(['proxies', 'list'], { env: { ROTA_URL: `http://127.0.0.1:${deadPort}` } });
    assert.equal(down.code, 1);
    assert.match(
      down.stderr,
      /^CONNECTION_FAILED: cannot reach Rota at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/,
    );
    assert.doesNotMatch(wrong.stderr + down.stderr, /\n\s+at /);
  });

  test('serve runs the server as npm start does', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ['bin/rota', 'serve'], {
      cwd: ROOT,
      env: cleanEnv({
        ROTA_PORT: String(port),
        ROTA_PROXY_PORT: '0',
        ROTA_SOCKS_PORT: '0',
        ROTA_LOG_LEVEL: 'warn',
      }),
      stdio: 'ignore',
    });
    try {
      let ready = false;
      for (let i = 0; i < 100 && !ready; i++) {
        ready = await fetch(`http://127.0.0.1:${port}/api/v1/ready`).then(
          (r) => r.ok,
          () => false,
        );
        if (!ready) await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(ready, 'rota serve answers /ready');
      // The same program as npm start: the bundle, built first when stale, with Rota's runtime flags.
      const cmd = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8');
      assert.match(cmd, /--expose-gc/, cmd);
      const built = statSync(join(ROOT, 'dist', 'main.js')).mtimeMs;
      assert.ok(built >= statSync(join(ROOT, 'src', 'cli', 'main.ts')).mtimeMs, 'dist/ built from src/');
    } finally {
      child.kill('SIGTERM');
      const [code] = (await once(child, 'exit')) as [number | null];
      assert.equal(code, 0, 'a clean stop');
    }
  });
});
