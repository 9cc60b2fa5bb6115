/**
 * The CONNECT load generator. The harness calls runTunnelLoad(), which runs this same file in a process
 * of its own (so that it never shares an event loop with the target or anything it measures):
 *
 *   node bench/lib/tunnels.ts '<job as JSON>'    (prints one line: TUNNEL_JSON {...})
 *
 * rate: `loops` concurrent loops of connect, CONNECT, one GET, close, for `durationS`;
 * bulk: one tunnel, the same large GET again and again for `durationS` (at least once);
 * keep: `loops` tunnels, each carrying GETs back to back for `durationS` (`done` counts the answers).
 * With `tls`, every tunnel speaks TLS to its host (trusting only `tls.ca`, the inspecting proxy's CA),
 * and a rate loop's tunnels go to the next of `tls.hosts` in turn (same port) when it is given.
 * Every wait is bounded: a stuck tunnel counts as a failure, never hangs the run.
 */
import { isIP } from 'node:net';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { run } from './proc.ts';
import { withNofile } from './rota.ts';
import { get, openTunnel, type Tunnel, WireError } from './tunnel-wire.ts';

export interface TunnelJob {
  readonly mode: 'rate' | 'bulk' | 'keep';
  readonly proxyPort: number;
  /** host:port of the target, for CONNECT and the Host header. */
  readonly authority: string;
  readonly path: string;
  readonly durationS: number;
  /** rate: concurrent loops. */
  readonly loops?: number;
  readonly tls?: { readonly ca: string; readonly hosts?: readonly string[] };
}

export type TunnelResult = ReturnType<Tally['result']>;

const PREFIX = 'TUNNEL_JSON ';
const TIMEOUT_MS = 30_000;

/** Runs one job in a fresh load-generator process (descriptor limit raised); returns its figures. */
export async function runTunnelLoad(job: TunnelJob): Promise<TunnelResult> {
  const file = fileURLToPath(import.meta.url);
  const [cmd, args] = withNofile(65_536, process.execPath, [file, JSON.stringify(job)]);
  const r = await run(cmd, args, { timeoutMs: (job.durationS + 90) * 1000 });
  const line = r.stdout.split('\n').find((l) => l.startsWith(PREFIX));
  if (r.code !== 0 || !line) {
    const why = (r.stderr || r.stdout).trim().slice(-300) || 'no output';
    throw new Error(`tunnel load generator failed (exit ${r.code}): ${why}`);
  }
  return JSON.parse(line.slice(PREFIX.length)) as TunnelResult;
}

class Tally {
  done = 0;
  failed = 0;
  bytes = 0;
  firstFailure: string | null = null;
  readonly latencies: number[] = [];
  private readonly cpu0 = process.cpuUsage();
  private readonly t0 = performance.now();

  fail(e: unknown): void {
    this.failed++;
    this.firstFailure ??= e instanceof WireError ? e.kind : String(e);
  }

  /**
   * `done`: rate, tunnels that carried their GET; bulk and keep, answers. `p50Ms`, `p99Ms` (rate): from the
   * TCP connect to the last byte of the answer. `loadgenUs`: this process's own CPU per tunnel or answer.
   */
  result() {
    const seconds = (performance.now() - this.t0) / 1000;
    const cpu = process.cpuUsage(this.cpu0);
    const sorted = this.latencies.sort((a, b) => a - b);
    const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
    const { done, failed, bytes, firstFailure } = this;
    const [perS, mibps, p50Ms, p99Ms] = [done / seconds, bytes / 1024 / 1024 / seconds, pct(0.5), pct(0.99)];
    const loadgenUs = done > 0 ? (cpu.user + cpu.system) / done : 0;
    return { done, failed, firstFailure, seconds, perS, bytes, mibps, p50Ms, p99Ms, loadgenUs };
  }
}

async function expect200(t: Tunnel, job: TunnelJob, rest: Buffer) {
  const r = await get(t.socket, rest, job.authority, job.path, TIMEOUT_MS);
  if (r.status !== 200) throw new WireError(`target status ${r.status}`, `GET answered ${r.status}`);
  return r;
}

let turn = 0;
/** A tunnel to the job's target (or the next of `tls.hosts`), with TLS inside when the job asks. */
async function open(job: TunnelJob): Promise<Tunnel> {
  const port = job.authority.slice(job.authority.lastIndexOf(':') + 1);
  const hosts = job.tls?.hosts;
  const authority = hosts ? `${hosts[turn++ % hosts.length]}:${port}` : job.authority;
  const t = await openTunnel(job.proxyPort, authority, TIMEOUT_MS);
  if (!job.tls) return t;
  const host = authority.slice(0, authority.lastIndexOf(':'));
  const o = { socket: t.socket, host, ca: job.tls.ca, servername: isIP(host) ? undefined : host };
  const socket = tls.connect(o).on('error', () => {});
  const ok = await new Promise<boolean>((resolve) => {
    socket.once('secureConnect', () => resolve(true)).once('close', () => resolve(false));
    setTimeout(() => resolve(false), TIMEOUT_MS).unref();
  });
  if (ok) return { socket, rest: Buffer.alloc(0) };
  socket.destroy();
  throw new WireError('tls', `TLS through the tunnel to ${authority} failed`);
}

async function rate(job: TunnelJob): Promise<TunnelResult> {
  const tally = new Tally();
  const end = performance.now() + job.durationS * 1000;
  const loop = async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        const t = await open(job);
        await expect200(t, job, t.rest).finally(() => t.socket.destroy());
        tally.latencies.push(performance.now() - t0);
        tally.done++;
      } catch (e) {
        tally.fail(e);
        await new Promise((r) => setTimeout(r, 5)); // a proxy refusing at once must not make a busy spin
      }
    }
  };
  await Promise.all(Array.from({ length: job.loops ?? 50 }, loop));
  return tally.result();
}

async function bulk(job: TunnelJob, tally = new Tally()): Promise<TunnelResult> {
  try {
    const t = await open(job);
    const end = performance.now() + job.durationS * 1000;
    let rest = t.rest;
    try {
      do {
        const r = await expect200(t, job, rest);
        rest = r.rest;
        tally.bytes += r.bodyBytes;
        tally.done++;
      } while (performance.now() < end);
    } finally {
      t.socket.destroy();
    }
  } catch (e) {
    tally.fail(e);
  }
  return tally.result();
}

/** `loops` tunnels at once, each as bulk's (answers counted in one tally). */
async function keep(job: TunnelJob, tally = new Tally()): Promise<TunnelResult> {
  await Promise.all(Array.from({ length: job.loops ?? 50 }, () => bulk(job, tally)));
  return tally.result();
}

if (import.meta.main) {
  const job = JSON.parse(process.argv[2] ?? '{}') as TunnelJob;
  const end = (code: number, out: NodeJS.WriteStream, line: string) => {
    out.write(`${line}\n`);
    process.exit(code);
  };
  const giveUp = () => end(3, process.stderr, 'tunnels: still running long after its duration; giving up');
  setTimeout(giveUp, (job.durationS + 75) * 1000).unref();
  ({ rate, bulk, keep })[job.mode](job).then(
    (r) => end(0, process.stdout, `${PREFIX}${JSON.stringify(r)}`),
    (e: unknown) => end(1, process.stderr, `tunnels: ${(e as Error).stack ?? String(e)}`),
  );
}
