import { chownSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { aptInstall, canConnect, freePorts, run, startProcess, waitUntil } from './proc.ts';

export const SQUID = '/usr/sbin/squid';

const httpPorts = (_dir: string, ports: readonly number[]) => ports.map((p) => `http_port 127.0.0.1:${p}`);

interface SquidOptions {
  readonly name?: string;
  readonly bin?: string;
  readonly lines?: (dir: string, ports: readonly number[]) => string[];
  readonly init?: (dir: string) => Promise<void>;
}

export type Squid = Awaited<ReturnType<typeof startSquid>>;

/** Installs Debian's squid when it is missing and we may (root with apt-get); otherwise says why not. */
export async function ensureSquid(log: (m: string) => void): Promise<void> {
  // The package starts a system-wide squid on 3128; ours runs on ports of its own.
  if (await aptInstall('squid', SQUID, log)) await run('service', ['squid', 'stop'], { timeoutMs: 30_000 });
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

/**
 * One squid process listening on `count` loopback ports (`ports`, one http_port each), so that a gateway
 * sees `count` distinct proxies; `o.bin` another squid build, `o.lines` the lines before the common ones
 * (by default the http_port lines), `o.init` run before it starts.
 */
export async function startSquid(workDir: string, count: number, o: SquidOptions = {}) {
  const { name = 'squid', bin = SQUID, lines = httpPorts, init = async () => {} } = o;
  const dir = join(workDir, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const ports = await freePorts(count);
  const conf = join(dir, 'squid.conf');
  writeFileSync(conf, config(dir, lines(dir, ports)));
  // Run as root, squid drops to its cache_effective_user (Debian: proxy), which must own its files.
  if (process.getuid?.() === 0) {
    const id = await run('id', ['-u', 'proxy']);
    const uid = Number(id.stdout.trim());
    if (id.code === 0 && Number.isInteger(uid)) chownSync(dir, uid, uid);
  }
  await init(dir);
  const v = await run(bin, ['-v']);
  const version = /Version (\S+)/.exec(v.stdout)?.[1] ?? 'unknown';
  const proc = startProcess(name, bin, ['-N', '-f', conf], { logPath: join(workDir, 'logs', `${name}.log`) });
  const listening = async () => (await Promise.all(ports.map(canConnect))).every(Boolean);
  await waitUntil(proc, `squid (its own log: ${dir}/cache.log)`, listening, 15_000, 50);
  return { ports, proc, version };
}
