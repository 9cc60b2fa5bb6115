import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canConnect, freePort, type Proc, sleep, startProcess } from './proc.ts';
import { RssWatch } from './rss.ts';

/**
 * Redis and nginx for workload 10, started the way test/helpers/redis.ts and test/helpers/nginx.ts start
 * them (free loopback port, everything in a folder of its own), but registered with the harness
 * (bench/lib/proc.ts) so that an interrupted run stops them too.
 */
const REDIS = '/usr/bin/redis-server';
const NGINX = '/usr/sbin/nginx';

export interface Server {
  readonly port: number;
  readonly url: string;
  readonly proc: Proc;
}

async function waitListening(proc: Proc, port: number, what: string): Promise<void> {
  const until = Date.now() + 10_000;
  while (!(await canConnect(port))) {
    if (Date.now() > until || proc.hasExited()) {
      await proc.stop();
      throw new Error(`${what} did not start: see ${proc.logPath}`);
    }
    await sleep(30);
  }
}

/** A throwaway redis-server: no persistence, loopback only. */
export async function startRedisServer(workDir: string, name: string): Promise<Server> {
  if (!existsSync(REDIS))
    throw new Error(`${REDIS} is missing: install redis-server (scripts/system-deps.sh)`);
  const port = await freePort();
  const dir = join(workDir, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  const proc = startProcess(name, REDIS, [...args, '--dir', dir, '--logfile', ''], {
    logPath: join(workDir, 'logs', `${name}.log`),
  });
  await waitListening(proc, port, 'redis-server');
  return { port, url: `redis://127.0.0.1:${port}`, proc };
}

/**
 * nginx as deploy/nginx.conf balances the API (round-robin, `keepalive 64` to the upstreams, HTTP/1.1,
 * X-Forwarded-For), one worker process, no access log.
 */
export async function startNginxLb(
  workDir: string,
  name: string,
  upstreams: readonly number[],
): Promise<Server> {
  if (!existsSync(NGINX)) throw new Error(`${NGINX} is missing: install nginx (scripts/system-deps.sh)`);
  const port = await freePort();
  const dir = join(workDir, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'logs'), { recursive: true });
  const conf = [
    'worker_processes 1;',
    'daemon off;',
    `pid ${join(dir, 'nginx.pid')};`,
    `error_log ${join(dir, 'logs', 'error.log')} warn;`,
    'events { worker_connections 4096; }',
    'http {',
    '  access_log off;',
    `  client_body_temp_path ${join(dir, 'body')};`,
    `  proxy_temp_path ${join(dir, 'proxy')};`,
    `  upstream rota { ${upstreams.map((p) => `server 127.0.0.1:${p};`).join(' ')} keepalive 64; }`,
    `  server { listen 127.0.0.1:${port};`,
    '    location / { proxy_pass http://rota; proxy_http_version 1.1; proxy_set_header Connection "";',
    '      proxy_set_header X-Forwarded-For $remote_addr; proxy_read_timeout 310s; } }',
    '}',
  ].join('\n');
  const file = join(dir, 'nginx.conf');
  writeFileSync(file, conf);
  const proc = startProcess(name, NGINX, ['-p', dir, '-c', file], {
    logPath: join(workDir, 'logs', `${name}.log`),
  });
  await waitListening(proc, port, 'nginx');
  return { port, url: `http://127.0.0.1:${port}`, proc };
}

/** Direct children of a process (the workers of a ROTA_WORKERS primary), from /proc. */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Peak RSS of several processes at once: each one's own high-water mark. */
export class RssGroupWatch {
  private readonly watches: RssWatch[];

  constructor(pids: readonly number[]) {
    this.watches = pids.map((p) => new RssWatch(p));
  }

  /** Each process's peak, bytes. */
  stop(): number[] {
    return this.watches.map((w) => w.stop());
  }
}

/** Lines of a log file containing `text` (0 when the file is not there yet). */
export function countInLog(path: string, text: string): number {
  try {
    return readFileSync(path, 'utf8').split(text).length - 1;
  } catch {
    return 0;
  }
}
