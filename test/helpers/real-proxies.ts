import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Real third-party proxies for integration tests: Debian's tinyproxy (HTTP, optional Basic auth),
 * squid (HTTP forward proxy) and dante-server (SOCKS4/5, optional username/password). Each runs in the foreground on a free loopback
 * port with a generated config, is awaited until it accepts connections, and is killed on close().
 * scripts/system-deps.sh installs both; a missing binary fails loudly, never skips.
 */

export interface RealProxy {
  readonly port: number;
  readonly username: string | null;
  readonly password: string | null;
  close(): Promise<void>;
}

const TINYPROXY = '/usr/bin/tinyproxy';
const DANTED = '/usr/sbin/danted';
const SQUID = '/usr/sbin/squid';
const SQUID_NCSA_AUTH = '/usr/lib/squid/basic_ncsa_auth';

/** The system user dante checks username/password against (created on demand, left in place). */
export const SOCKS_TEST_USER = 'rota-socks-test';
export const SOCKS_TEST_PASSWORD = 'Rota-socks-pw-1';

function requireBinary(path: string, pkg: string): void {
  if (!existsSync(path)) {
    throw new Error(`${path} is missing: install the Debian package ${pkg} (scripts/system-deps.sh does it)`);
  }
}

interface Closable {
  close(): Promise<void> | void;
}

/**
 * Starts fixtures together. If one fails (a missing binary, a port taken), the ones that did start are
 * closed before the error is thrown: otherwise their open sockets keep the test process alive and the
 * file hangs instead of failing.
 */
export async function startAllOrClose<T extends readonly Closable[]>(
  starts: {
    readonly [K in keyof T]: Promise<T[K]>;
  },
): Promise<T> {
  const all = await Promise.allSettled(starts as readonly Promise<Closable>[]);
  const failed = all.find((r) => r.status === 'rejected');
  if (!failed) return all.map((r) => (r as PromiseFulfilledResult<Closable>).value) as unknown as T;
  for (const r of all) if (r.status === 'fulfilled') await r.value.close();
  throw failed.reason;
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (addr === null || typeof addr === 'string') throw new Error('no free port');
  return addr.port;
}

/** The lowest port the kernel hands out for listen(0) and outgoing connections. */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * A loopback port where nothing listens, for a "dead proxy" (connection refused). Not freePort(): a
 * port the kernel has just handed out and released is ephemeral, and a test file running at the same
 * time may be given it for a listener of its own (seen once in CI: a "closed" proxy answered 200).
 * listen(0) never hands out a port below the ephemeral range, so nothing a test starts takes this one.
 */
export async function closedPort(): Promise<number> {
  const low = ephemeralLow();
  if (low <= 10_001) return freePort();
  for (let i = 0; i < 50; i++) {
    const port = 10_000 + Math.floor(Math.random() * (low - 10_000));
    if (!(await canConnect(port))) return port;
  }
  throw new Error('no closed port found below the ephemeral range');
}

/** Whether something accepts TCP connections on 127.0.0.1:`port` now. */
export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Starts `cmd` in its own process group and waits until `port` accepts connections. */
async function launch(
  name: string,
  cmd: string,
  args: string[],
  port: number,
  dir: string,
): Promise<RealProxy> {
  const child = spawn(cmd, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (b: Buffer) => {
    output = (output + b.toString('utf8')).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const deadline = Date.now() + 10_000;
  while (!(await canConnect(port))) {
    if (exited || Date.now() > deadline) {
      await kill(child);
      await rm(dir, { recursive: true, force: true });
      throw new Error(`${name} did not start listening on 127.0.0.1:${port}. Output:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    username: null,
    password: null,
    close: async () => {
      await kill(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** SIGTERM to the process group we started (dante forks helpers), SIGKILL if it lingers. */
async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const pid = child.pid;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(-pid, s);
    } catch {
      // Already gone.
    }
  };
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), 3_000);
  await gone;
  clearTimeout(timer);
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

export async function startTinyproxy(
  opts: { auth?: { username: string; password: string } } = {},
): Promise<RealProxy> {
  requireBinary(TINYPROXY, 'tinyproxy');
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'rota-tinyproxy-'));
  const lines = [
    `Port ${port}`,
    'Listen 127.0.0.1',
    'Timeout 30',
    'MaxClients 64',
    'Allow 127.0.0.1',
    'LogLevel Warning',
    'DisableViaHeader Yes',
  ];
  // tinyproxy drops privileges when started as root; it needs someone to become.
  if (isRoot()) lines.push('User nobody', 'Group nogroup');
  if (opts.auth) lines.push(`BasicAuth ${opts.auth.username} ${opts.auth.password}`);
  const conf = join(dir, 'tinyproxy.conf');
  await writeFile(conf, `${lines.join('\n')}\n`);
  const proxy = await launch('tinyproxy', TINYPROXY, ['-d', '-c', conf], port, dir);
  return { ...proxy, username: opts.auth?.username ?? null, password: opts.auth?.password ?? null };
}

/**
 * dante checks SOCKS5 username/password against system accounts, so a dedicated user with a known
 * password is created (or its password reset) when we run as root. Without root this is impossible
 * and the caller gets a clear error instead of a silent skip.
 */
export function ensureSocksUser(): void {
  if (!isRoot()) {
    throw new Error(
      `dante username auth needs the system user ${SOCKS_TEST_USER}; creating it needs root (run the tests as root, or create it with password ${SOCKS_TEST_PASSWORD})`,
    );
  }
  const exists = () => {
    try {
      execFileSync('id', ['-u', SOCKS_TEST_USER], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };
  if (!exists()) {
    const args = ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', SOCKS_TEST_USER];
    try {
      execFileSync('useradd', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (err) {
      if (!exists()) throw err; // otherwise a concurrent run created it first
    }
  }
  // Another test process may hold the shadow-file lock for a moment: retry briefly.
  for (let i = 0; ; i++) {
    try {
      execFileSync('chpasswd', {
        input: `${SOCKS_TEST_USER}:${SOCKS_TEST_PASSWORD}\n`,
        stdio: ['pipe', 'ignore', 'pipe'],
      });
      return;
    } catch (err) {
      if (i >= 4) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
}

/** With `blockPort`, dante's rules refuse (SOCKS5 reply 2, not allowed) every target on that port. */
export async function startDante(opts: { auth?: boolean; blockPort?: number } = {}): Promise<RealProxy> {
  requireBinary(DANTED, 'dante-server');
  if (opts.auth) ensureSocksUser();
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'rota-dante-'));
  const conf = join(dir, 'danted.conf');
  const privileged = isRoot() ? ['user.privileged: root', 'user.unprivileged: nobody'] : [];
  await writeFile(
    conf,
    [
      'logoutput: stderr',
      `internal: 127.0.0.1 port = ${port}`,
      'external: 127.0.0.1',
      'clientmethod: none',
      `socksmethod: ${opts.auth ? 'username' : 'none'}`,
      ...privileged,
      'client pass { from: 127.0.0.0/8 to: 0.0.0.0/0 }',
      ...(opts.blockPort === undefined
        ? []
        : [`socks block { from: 127.0.0.0/8 to: 0.0.0.0/0 port = ${opts.blockPort} }`]),
      'socks pass { from: 127.0.0.0/8 to: 0.0.0.0/0 }',
      '',
    ].join('\n'),
  );
  const proxy = await launch('danted', DANTED, ['-f', conf, '-N', '1'], port, dir);
  if (!opts.auth) return proxy;
  return { ...proxy, username: SOCKS_TEST_USER, password: SOCKS_TEST_PASSWORD };
}

/**
 * Debian's squid as a plain forward proxy, configured as bench/lib/squid.ts does: no cache, no access
 * log, no pinger, no Via/X-Forwarded-For, its own pid file and cache.log in a temp folder, foreground
 * (-N). localhost may use it for anything, CONNECT to any port included (no SSL_ports rule). With `auth`,
 * Basic proxy auth against an htpasswd file (basic_ncsa_auth): 407 without the right credentials. With
 * `stockRules`, Debian's stock squid.conf rules come first: CONNECT only to port 443 (403 otherwise), and
 * requests only to its Safe_ports.
 */
export async function startSquid(
  opts: { auth?: { username: string; password: string }; stockRules?: boolean } = {},
): Promise<RealProxy> {
  requireBinary(SQUID, 'squid');
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'rota-squid-'));
  const conf = join(dir, 'squid.conf');
  const access = ['http_access allow localhost'];
  if (opts.auth) {
    const { username, password } = opts.auth;
    const hash = execFileSync('openssl', ['passwd', '-apr1', '-stdin'], {
      input: password,
      encoding: 'utf8',
    });
    await writeFile(join(dir, 'passwd'), `${username}:${hash.trim()}\n`);
    access.splice(
      0,
      1,
      `auth_param basic program ${SQUID_NCSA_AUTH} ${join(dir, 'passwd')}`,
      'auth_param basic realm rota-test-squid',
      'acl authed proxy_auth REQUIRED',
      'http_access allow localhost authed',
    );
  }
  if (opts.stockRules) access.unshift(...SQUID_STOCK_RULES);
  await writeFile(conf, squidConfig(dir, port, access));
  // Started as root, squid drops to its cache_effective_user (Debian: proxy), which must own its files.
  if (isRoot()) {
    const uid = Number(execFileSync('id', ['-u', 'proxy'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'proxy'], { encoding: 'utf8' }).trim());
    await chown(dir, uid, gid);
  }
  // -d 1 copies cache.log's warnings and errors to stderr, which launch() shows if squid fails to start.
  const proxy = await launch('squid', SQUID, ['-N', '-d', '1', '-f', conf], port, dir);
  return { ...proxy, username: opts.auth?.username ?? null, password: opts.auth?.password ?? null };
}

/** The access rules of Debian's stock /etc/squid/squid.conf (its ACL lines, as shipped). */
const SQUID_STOCK_RULES = [
  'acl SSL_ports port 443',
  'acl Safe_ports port 80 21 443 70 210 1025-65535 280 488 591 777',
  'acl CONNECT method CONNECT',
  'http_access deny !Safe_ports',
  'http_access deny CONNECT !SSL_ports',
];

function squidConfig(dir: string, port: number, access: readonly string[]): string {
  return [
    `http_port 127.0.0.1:${port}`,
    'visible_hostname rota-test-squid',
    ...access,
    'http_access deny all',
    'cache deny all',
    'cache_mem 0 MB',
    'access_log none',
    'cache_store_log none',
    `cache_log ${join(dir, 'cache.log')}`,
    `pid_filename ${join(dir, 'squid.pid')}`,
    `coredump_dir ${dir}`,
    'netdb_filename none',
    'pinger_enable off',
    'via off',
    'forwarded_for delete',
    'shutdown_lifetime 0 seconds',
    '',
  ].join('\n');
}
