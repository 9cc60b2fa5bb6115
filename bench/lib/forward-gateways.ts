import { readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { SocksClient } from 'socks';
import type { Ctx } from './context.ts';
import { canConnect, freePort, freePorts, type Proc, sleep, startProcess } from './proc.ts';
import { addProxies, ROOT, raiseNofile, startRota } from './rota.ts';
import { get, openTunnel } from './tunnel-wire.ts';

/**
 * The four subjects of workload 8, each an HTTP forward proxy on loopback that ends at the same squid:
 *
 *   client ──▶ squid ──▶ target                                         (direct)
 *   client ──▶ Rota's HTTP listener | proxy-chain | forward relay ──▶ squid (10 ports) ──▶ target
 */
export type ForwardName = 'direct' | 'rota' | 'proxyChain' | 'relay';
export const FORWARD_NAMES: readonly ForwardName[] = ['direct', 'rota', 'proxyChain', 'relay'];

export interface ForwardProxy {
  readonly name: ForwardName;
  readonly port: number;
  /** The proxy's process (squid for direct), for CPU, RSS and descriptors. */
  readonly pid: number;
  /** Why absolute-URI requests cannot be measured (the probe failed), or null. */
  readonly getError: string | null;
  /** Why CONNECT tunnels cannot be measured, or null. */
  readonly connectError: string | null;
  readonly logPath: string | null;
  /** The process's open-file limit (read at start: the process is gone by the time notes are written). */
  readonly nofile: number | null;
  /** Rota only: what one CONNECT and GET through its SOCKS5 listener gave (null: a 200), for the notes. */
  readonly socksError?: string | null;
}

export type Subjects = Map<ForwardName, ForwardProxy | Error>;

/** What Rota's cells say while its forward listener does not exist yet (the run notes say more). */
export const LISTENER_MISSING = 'listener not available';

/** Descriptors for every proxy process: 5,000 tunnels take two each, and then some. */
const NOFILE = 65_536;

/** One absolute-URI GET through the proxy; resolves with why it failed, or null. */
function probeGet(port: number, url: string, wantProxyId: boolean): Promise<string | null> {
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: url,
        headers: { host: new URL(url).host },
        agent: false,
        timeout: 10_000,
      },
      (res) => {
        res.resume();
        res.once('end', () => {
          if (res.statusCode !== 200) resolve(`absolute-URI GET answered ${res.statusCode}`);
          else if (wantProxyId && res.headers['x-rota-proxy-id'] === undefined)
            resolve('absolute-URI GET answered 200 without X-Rota-Proxy-Id');
          else resolve(null);
        });
      },
    );
    req.once('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.once('error', (e) => resolve(`absolute-URI GET failed: ${e.message}`));
    req.end();
  });
}

/** One CONNECT to the target and a GET of `path` inside it; resolves with why it failed, or null. */
async function probeConnect(port: number, authority: string, path: string): Promise<string | null> {
  try {
    const t = await openTunnel(port, authority, 10_000);
    try {
      const r = await get(t.socket, t.rest, authority, path, 10_000);
      return r.status === 200 ? null : `GET inside the tunnel answered ${r.status}`;
    } finally {
      t.socket.destroy();
    }
  } catch (e) {
    return `CONNECT failed: ${(e as Error).message}`;
  }
}

async function probeBoth(ctx: Ctx, name: ForwardName, port: number, pid: number, logPath: string | null) {
  const url = ctx.target.jsonUrl;
  const authority = new URL(url).host;
  const getError = await probeGet(port, url, name === 'rota');
  const connectError = await probeConnect(port, authority, '/json');
  return { name, port, pid, getError, connectError, logPath, nofile: nofileOf(pid) };
}

/** A reference proxy script from bench/reference, in its own process with a raised descriptor limit. */
async function startScript(ctx: Ctx, name: ForwardName, script: string, ports: readonly number[]) {
  const port = await freePort();
  const logPath = join(ctx.workDir, 'logs', `forward-${name}.log`);
  const file = join(ROOT, 'bench', 'reference', script);
  const proc = startProcess(
    `forward-${name}`,
    'bash',
    ['-c', `${raiseNofile(NOFILE)}; exec "$0" "$@"`, process.execPath, file, String(port), ports.join(',')],
    { logPath },
  );
  const deadline = Date.now() + 15_000;
  while (!(await canConnect(port))) {
    if (proc.hasExited() || Date.now() > deadline) {
      await proc.stop();
      throw new Error(`${script} did not start: see ${logPath}`);
    }
    await sleep(20);
  }
  return { proc, port, logPath };
}

/** Rota with both listeners on free ports and the squid ports as its pool. */
async function startRotaForward(ctx: Ctx, phase: string, ports: readonly number[]) {
  const [proxyPort, socksPort] = await freePorts(2);
  const rota = await startRota({
    name: `forward-${phase}`,
    workDir: ctx.workDir,
    nodeFlags: ctx.rotaNodeFlags,
    nofile: NOFILE,
    env: { ROTA_PROXY_PORT: String(proxyPort), ROTA_SOCKS_PORT: String(socksPort) },
  });
  try {
    await addProxies(
      rota.base,
      ports.map((p) => ({ url: `http://127.0.0.1:${p}` })),
    );
  } catch (e) {
    await rota.stop();
    throw e;
  }
  return { rota, proxyPort: proxyPort!, socksPort: socksPort! };
}

async function addRota(ctx: Ctx, phase: string, subjects: Subjects, stops: Proc[]): Promise<void> {
  const ports = ctx.squid?.ports ?? [];
  const { rota, proxyPort, socksPort } = await startRotaForward(ctx, phase, ports);
  stops.push(rota.proc);
  // The listener may open a moment after /api/v1/ready: give it two seconds.
  for (let i = 0; i < 40 && !(await canConnect(proxyPort)); i++) await sleep(50);
  if (!(await canConnect(proxyPort))) {
    const why = `${LISTENER_MISSING} (nothing listens on ROTA_PROXY_PORT ${proxyPort})`;
    const pid = rota.proc.pid;
    const logPath = rota.proc.logPath;
    subjects.set('rota', {
      name: 'rota',
      port: proxyPort,
      pid,
      getError: why,
      connectError: why,
      logPath,
      nofile: nofileOf(pid),
    });
    return;
  }
  const probed = await probeBoth(ctx, 'rota', proxyPort, rota.proc.pid, rota.proc.logPath);
  subjects.set('rota', { ...probed, socksError: await probeSocks(socksPort, ctx.target.jsonUrl) });
}

/** One SOCKS5 CONNECT to the target and a GET inside it; resolves with why it failed, or null. */
async function probeSocks(port: number, url: string): Promise<string | null> {
  const u = new URL(url);
  try {
    const { socket } = await SocksClient.createConnection({
      proxy: { host: '127.0.0.1', port, type: 5 },
      command: 'connect',
      destination: { host: u.hostname, port: Number(u.port) },
      timeout: 10_000,
    });
    socket.on('error', () => {});
    try {
      const r = await get(socket, Buffer.alloc(0), u.host, u.pathname, 10_000);
      return r.status === 200 ? null : `GET through the SOCKS5 tunnel answered ${r.status}`;
    } finally {
      socket.destroy();
    }
  } catch (e) {
    return `SOCKS5 CONNECT failed: ${(e as Error).message}`;
  }
}

/**
 * Starts Rota, proxy-chain and the forward relay afresh (squid is shared), probes each with one GET and
 * one CONNECT; returns them (or why not) and a function that stops them.
 */
export async function startForwardProxies(
  ctx: Ctx,
  phase: string,
): Promise<{ subjects: Subjects; stop: () => Promise<string[]> }> {
  const subjects: Subjects = new Map();
  const stops: Proc[] = [];
  const squid = ctx.squid;
  if (!squid) {
    for (const n of FORWARD_NAMES) subjects.set(n, new Error(`squid: ${ctx.squidError}`));
    return { subjects, stop: async () => [] };
  }
  subjects.set('direct', await probeBoth(ctx, 'direct', squid.ports[0]!, squid.proc.pid, null));
  const scripts: Array<[ForwardName, string]> = [
    ['proxyChain', 'proxy-chain.ts'],
    ['relay', 'forward-relay.ts'],
  ];
  for (const [name, script] of scripts) {
    try {
      const s = await startScript(ctx, name, script, squid.ports);
      stops.push(s.proc);
      subjects.set(name, await probeBoth(ctx, name, s.port, s.proc.pid, s.logPath));
    } catch (e) {
      subjects.set(name, e as Error);
    }
  }
  try {
    await addRota(ctx, phase, subjects, stops);
  } catch (e) {
    subjects.set('rota', e as Error);
  }
  return { subjects, stop: () => stopAndReport(stops) };
}

/** Stops the proxies; returns a line for each one that had already gone (it crashed, or was killed). */
async function stopAndReport(procs: readonly Proc[]): Promise<string[]> {
  const gone = procs.filter((p) => p.hasExited());
  const lines = await Promise.all(
    gone.map(async (p) => `${p.name} exited before the end (${await p.exited}): see ${p.logPath}`),
  );
  await Promise.all(procs.map((p) => p.stop()));
  return lines;
}

/** "Max open files" soft limit of a process, from /proc, or null. */
export function nofileOf(pid: number): number | null {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Error-level lines (pino level ≥ 50) in a JSON log, and the first one, for the run notes. */
export function logErrors(path: string | null): { count: number; first: string | null } {
  if (path === null) return { count: 0, first: null };
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return { count: 0, first: null };
  }
  const lines = text.split('\n').filter((l) => /"level":(50|60)\b/.test(l));
  return { count: lines.length, first: lines[0]?.slice(0, 300) ?? null };
}
