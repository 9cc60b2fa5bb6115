/**
 * A throwaway PostgreSQL server for tests, from Debian's `postgresql` package: initdb + pg_ctl in a temp
 * folder, listening on a free loopback port only. It never uses a server already running on the machine,
 * and fails loudly (no skip) when the binaries are missing, since a skipped storage test proves nothing.
 * As root, every server command runs as the `postgres` system user, because initdb refuses root.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './server.ts';

const run = promisify(execFile);
const ROOT_DIR = '/usr/lib/postgresql';

export interface TestPostgres {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  readonly url: string;
  readonly port: number;
  /** The URL of another database on this server. */
  urlFor(database: string): string;
  /** Creates an empty database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Starts the server again after stop() or kill(), on the same port and data. */
  start(): Promise<void>;
  /** A clean shutdown (pg_ctl stop -m fast). */
  stop(): Promise<void>;
  /** A crash-like shutdown (pg_ctl stop -m immediate): connections drop at once, no checkpoint. */
  kill(): Promise<void>;
  /** SIGSTOP to the server and all its processes: connections stay open but nothing answers. */
  freeze(): void;
  /** SIGCONT after freeze(). */
  thaw(): void;
  /** Stops the server if running and deletes its folder. */
  destroy(): Promise<void>;
}

/** The newest installed version's bin folder; throws with the fix when PostgreSQL is not installed. */
export function postgresBinDir(): string {
  const versions = existsSync(ROOT_DIR)
    ? readdirSync(ROOT_DIR)
        .filter((v) => existsSync(join(ROOT_DIR, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const newest = versions[0];
  if (newest === undefined) {
    throw new Error(
      `PostgreSQL binaries not found under ${ROOT_DIR}/<version>/bin: run scripts/system-deps.sh ` +
        '(apt-get install postgresql)',
    );
  }
  return join(ROOT_DIR, newest, 'bin');
}

interface Runner {
  readonly asRoot: boolean;
  readonly uid: number;
  readonly gid: number;
}

function runner(): Runner {
  if (process.getuid?.() !== 0) return { asRoot: false, uid: -1, gid: -1 };
  const ids = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { asRoot: true, uid: ids('-u'), gid: ids('-g') };
}

/** Environment for server commands: none of the caller's PG* variables may point them elsewhere. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PG')));
}

function command(who: Runner, bin: string, args: string[]): [string, string[]] {
  return who.asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
}

/** The postmaster (first line of postmaster.pid) and its children, found through /proc. */
function signalAll(data: string, signal: NodeJS.Signals): void {
  const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const pids = [postmaster];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Field 4 of /proc/PID/stat is the parent pid; the command name (field 2) may hold spaces.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster)
        pids.push(Number(entry));
    } catch {
      // Exited meanwhile.
    }
  }
  // Children first on SIGSTOP, so that the postmaster never sees one stop while it still runs.
  for (const pid of signal === 'SIGSTOP' ? pids.reverse() : pids) {
    try {
      process.kill(pid, signal);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e; // exited meanwhile
    }
  }
}

// Whatever a test forgets to stop must not outlive the test run: pg_ctl daemonizes the server.
const live = new Map<string, () => void>();
process.once('exit', () => {
  for (const stop of live.values()) stop();
});

/** initdb + pg_ctl start on a free port; retries on another port if the chosen one was taken meanwhile. */
export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBinDir();
  const who = runner();
  const dir = mkdtempSync(join(tmpdir(), 'rota-pg-'));
  if (who.asRoot) chownSync(dir, who.uid, who.gid);
  const data = join(dir, 'data');
  const exec = async (tool: string, args: string[]) => {
    const [file, argv] = command(who, join(bin, tool), args);
    return run(file, argv, { cwd: dir, env: cleanEnv(), timeout: 60_000 });
  };
  try {
    await exec('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync']);
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${(e as Error).message}`);
  }
  let port = 0;
  const pgCtl = (args: string[]) => exec('pg_ctl', ['-D', data, '-w', '-t', '30', ...args]);
  const start = async () => {
    const options = [
      `-p ${port}`,
      '-c listen_addresses=127.0.0.1',
      `-c unix_socket_directories=${dir}`,
      '-c fsync=off',
      '-c shared_buffers=16MB',
      '-c max_connections=60',
    ].join(' ');
    await pgCtl(['-l', join(dir, 'server.log'), '-o', options, 'start']);
    live.set(dir, () => {
      const [file, argv] = command(who, join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop']);
      try {
        execFileSync(file, argv, { cwd: dir, env: cleanEnv(), stdio: 'ignore' });
      } catch {
        // Already stopped.
      }
      rmSync(dir, { recursive: true, force: true });
    });
  };
  const shutdown = async (mode: 'fast' | 'immediate') => {
    await pgCtl(['-m', mode, 'stop']);
  };
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      await start();
      break;
    } catch (e) {
      if (attempt >= 3) {
        const log = existsSync(join(dir, 'server.log')) ? readFileSync(join(dir, 'server.log'), 'utf8') : '';
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`PostgreSQL did not start: ${(e as Error).message}\n${log}`);
      }
    }
  }
  const urlFor = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  return {
    url: urlFor('postgres'),
    port,
    urlFor,
    async createDatabase(name) {
      const client = new pg.Client({ connectionString: urlFor('postgres') });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      } finally {
        await client.end();
      }
      return urlFor(name);
    },
    start,
    freeze: () => signalAll(data, 'SIGSTOP'),
    thaw: () => signalAll(data, 'SIGCONT'),
    stop: () => shutdown('fast'),
    kill: () => shutdown('immediate'),
    async destroy() {
      live.get(dir)?.();
      live.delete(dir);
    },
  };
}
