/**
 * scripts/system-deps.sh, which `npm test` runs, against stand-ins: `service`, `apt-get`, `id` and the
 * tools it looks for, first on PATH, and the files it looks at under SYSTEM_DEPS_ROOT. It must never stop a
 * service (one of the machine's own may be running), and an install must start none: apt-get runs under a
 * policy-rc.d refusing every start, which is removed afterwards only if the script wrote it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = join(import.meta.dirname, '..', 'scripts', 'system-deps.sh');
const ST_VERSION = /^ST_VERSION=(\S+)$/m.exec(readFileSync(SCRIPT, 'utf8'))?.[1] ?? '';
const SCRAPY_VERSION = /^SCRAPY_VERSION=(\S+)$/m.exec(readFileSync(SCRIPT, 'utf8'))?.[1] ?? '';

const made: string[] = [];
after(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

function executable(path: string, body: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
}

/** Files the script checks by path, under the stand-in root. */
const ROOT_TOOLS = [
  'usr/sbin/danted',
  'usr/sbin/squid',
  'usr/bin/curl',
  'usr/bin/redis-server',
  'usr/sbin/nginx',
  'usr/lib/postgresql/17/bin/initdb',
  'usr/bin/python3',
];

/**
 * A copy of the script (its schemathesis venv is found beside it, here a stand-in of the right version),
 * a root with every tool but `missing`, and stand-in commands that log each call to `calls.log`. The
 * stand-in apt-get also logs whether a policy-rc.d refusing starts (exit 101) was there as it installed.
 */
function world(
  missing: string[] = [],
  onInstall = '',
): { dir: string; root: string; log: string; script: string } {
  const dir = mkdtempSync(join(tmpdir(), 'rota-sysdeps-'));
  made.push(dir);
  const root = join(dir, 'root');
  const bin = join(dir, 'bin');
  const log = join(dir, 'calls.log');
  const script = join(dir, 'scripts', 'system-deps.sh');
  mkdirSync(dirname(script), { recursive: true });
  copyFileSync(SCRIPT, script);
  mkdirSync(join(root, 'usr', 'sbin'), { recursive: true });
  for (const f of ROOT_TOOLS) if (!missing.includes(f)) executable(join(root, f), 'exit 0');
  executable(join(dir, '.tools', 'st-venv', 'bin', 'schemathesis'), `echo "schemathesis ${ST_VERSION}"`);
  executable(join(dir, '.tools', 'scrapy-venv', 'bin', 'scrapy'), `echo "Scrapy ${SCRAPY_VERSION}"`);
  for (const tool of ['tinyproxy', 'promtool', 'chromium']) executable(join(bin, tool), 'exit 0');
  executable(join(bin, 'service'), `echo "service $*" >>"${log}"`);
  executable(join(bin, 'systemctl'), `echo "systemctl $*" >>"${log}"`);
  executable(join(bin, 'id'), 'echo 0');
  const policy = join(root, 'usr', 'sbin', 'policy-rc.d');
  executable(
    join(bin, 'apt-get'),
    [
      `echo "apt-get $*" >>"${log}"`,
      'if [ "$1" = install ]; then',
      `  "${policy}" squid start; echo "policy-rc.d exit $?" >>"${log}"`,
      `  ${onInstall || ':'}`,
      'fi',
      'exit 0',
    ].join('\n'),
  );
  return { dir, root, log, script };
}

async function runScript(w: { root: string; dir: string; script: string }): Promise<void> {
  await run('bash', [w.script], {
    env: { ...process.env, PATH: `${join(w.dir, 'bin')}:${process.env.PATH}`, SYSTEM_DEPS_ROOT: w.root },
    timeout: 30_000,
  });
}

function calls(log: string): string[] {
  return existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [];
}

test('system-deps with every tool present: no install, and no service stopped or started', async () => {
  const w = world();
  await runScript(w);
  assert.deepEqual(calls(w.log), []);
});

test('system-deps installing a missing package: under a policy-rc.d refusing starts, nothing stopped', async () => {
  const w = world(['usr/sbin/squid']);
  await runScript(w);
  const log = calls(w.log);
  assert.ok(log.includes('apt-get install -y -qq --no-install-recommends squid'), log.join('\n'));
  assert.ok(log.includes('policy-rc.d exit 101'), log.join('\n'));
  assert.deepEqual(
    log.filter((l) => l.startsWith('service') || l.startsWith('systemctl')),
    [],
  );
  assert.equal(existsSync(join(w.root, 'usr', 'sbin', 'policy-rc.d')), false, 'the policy it wrote is gone');
});

test('system-deps keeps a policy-rc.d that was there before, as it was', async () => {
  const w = world(['usr/bin/curl']);
  const policy = join(w.root, 'usr', 'sbin', 'policy-rc.d');
  executable(policy, 'exit 101 # the machine’s own');
  const before = readFileSync(policy, 'utf8');
  await runScript(w);
  assert.ok(calls(w.log).includes('apt-get install -y -qq --no-install-recommends curl'));
  assert.equal(readFileSync(policy, 'utf8'), before);
});

test('system-deps interrupted while installing still removes the policy-rc.d it wrote', async () => {
  // The stand-in apt-get stops the script as a Ctrl-C or a kill would.
  const w = world(['usr/bin/curl'], 'kill -TERM $PPID; sleep 1');
  await assert.rejects(runScript(w));
  assert.ok(calls(w.log).includes('policy-rc.d exit 101'));
  assert.equal(existsSync(join(w.root, 'usr', 'sbin', 'policy-rc.d')), false);
});
