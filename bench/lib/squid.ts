import { chownSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canConnect, freePorts, type Proc, run, sleep, startProcess } from './proc.ts';

export const SQUID = '/usr/sbin/squid';

export interface Squid {
  /** Loopback ports, one http_port each, all served by the same squid process. */
  readonly ports: readonly number[];
  readonly proc: Proc;
  readonly version: string;
}

/** Installs Debian's squid when it is missing and we may (root with apt-get); otherwise says why not. */
export async function ensureSquid(log: (m: string) => void): Promise<void> {
  if (existsSync(SQUID)) return;
  if (process.getuid?.() !== 0)
    throw new Error(`${SQUID} is missing and we are not root: apt-get install squid`);
  log('installing squid with apt-get...');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update', '-qq'], { env, timeoutMs: 300_000 });
  const r = await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'squid'], {
    env,
    timeoutMs: 600_000,
  });
  if (r.code !== 0 || !existsSync(SQUID))
    throw new Error(`apt-get install squid failed: ${r.stderr.slice(-300)}`);
  // The package starts a system-wide squid on 3128; ours runs on ports of its own.
  await run('service', ['squid', 'stop'], { timeoutMs: 30_000 });
}

/**
 * squid as a plain forward proxy that keeps connections alive on both sides and does nothing else: no
 * cache, no access log, no pinger, no Via/X-Forwarded-For; `listen` are its http_port lines.
 */
function config(dir: string, listen: readonly string[]): string {
  return [
    ...listen,
    'http_access allow localhost',
    'http_access deny all',
    'cache deny all',
    'cache_mem 0 MB',
    'access_log none',
    'cache_store_log none',
    `cache_log ${join(dir, 'cache.log')}`,
    `pid_filename ${join(dir, 'squid.pid')}`,
    `coredump_dir ${dir}`,
    'pinger_enable off',
    'max_filedescriptors 16384',
    'client_persistent_connections on',
    'server_persistent_connections on',
    'pconn_timeout 120 seconds',
    'via off',
    'forwarded_for delete',
    'shutdown_lifetime 0 seconds',
    '',
  ].join('\n');
}

/** One squid process listening on `count` loopback ports, so that a gateway sees `count` distinct proxies. */
export async function startSquid(workDir: string, count: number, name = 'squid'): Promise<Squid> {
  const dir = join(workDir, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const ports = await freePorts(count);
  const conf = join(dir, 'squid.conf');
  writeFileSync(
    conf,
    config(
      dir,
      ports.map((p) => `http_port 127.0.0.1:${p}`),
    ),
  );
  // Run as root, squid drops to its cache_effective_user (Debian: proxy), which must own its files.
  if (process.getuid?.() === 0) {
    const id = await run('id', ['-u', 'proxy']);
    const uid = Number(id.stdout.trim());
    if (id.code === 0 && Number.isInteger(uid)) chownSync(dir, uid, uid);
  }
  const v = await run(SQUID, ['-v']);
  const version = /Version (\S+)/.exec(v.stdout)?.[1] ?? 'unknown';
  const proc = startProcess(name, SQUID, ['-N', '-f', conf], {
    logPath: join(workDir, 'logs', `${name}.log`),
  });
  const deadline = Date.now() + 15_000;
  for (const port of ports) {
    while (!(await canConnect(port))) {
      if (proc.hasExited() || Date.now() > deadline) {
        await proc.stop();
        throw new Error(
          `squid did not listen on 127.0.0.1:${port}: see ${proc.logPath} and ${dir}/cache.log`,
        );
      }
      await sleep(50);
    }
  }
  return { ports, proc, version };
}
