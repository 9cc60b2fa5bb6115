import { chownSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canConnect, freePorts, run, sleep, startProcess } from './proc.ts';
import { SQUID, type Squid } from './squid.ts';

/** One squid port and the loopback address its outgoing connections leave from. */
export interface EgressProxy {
  readonly port: number;
  readonly egress: string;
}

export interface EgressSquid extends Squid {
  readonly proxies: readonly EgressProxy[];
}

/**
 * squid as bench/lib/squid.ts runs it (no cache, no log, persistent connections both ways), but each
 * `http_port` leaves from an address of its own (`tcp_outgoing_address` by port name), so that a site
 * can tell the proxies apart as it would tell real exit addresses apart. squid keys its idle server
 * connections by local address too, so a connection from one egress is never reused for another.
 */
function config(dir: string, proxies: readonly EgressProxy[]): string {
  return [
    ...proxies.map((p, i) => `http_port 127.0.0.1:${p.port} name=p${i}`),
    ...proxies.map((_, i) => `acl p${i} myportname p${i}`),
    ...proxies.map((p, i) => `tcp_outgoing_address ${p.egress} p${i}`),
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

/** A second squid (its own folder and pid file) whose port i leaves from `egress[i]`. */
export async function startEgressSquid(workDir: string, egress: readonly string[]): Promise<EgressSquid> {
  const dir = join(workDir, 'squid-egress');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const ports = await freePorts(egress.length);
  const proxies = ports.map((port, i) => ({ port, egress: egress[i]! }));
  const conf = join(dir, 'squid.conf');
  writeFileSync(conf, config(dir, proxies));
  if (process.getuid?.() === 0) {
    const id = await run('id', ['-u', 'proxy']);
    const uid = Number(id.stdout.trim());
    if (id.code === 0 && Number.isInteger(uid)) chownSync(dir, uid, uid);
  }
  const v = await run(SQUID, ['-v']);
  const version = /Version (\S+)/.exec(v.stdout)?.[1] ?? 'unknown';
  const proc = startProcess('squid-egress', SQUID, ['-N', '-f', conf], {
    logPath: join(workDir, 'logs', 'squid-egress.log'),
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
  return { ports, proxies, proc, version };
}
