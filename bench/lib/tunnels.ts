import { fileURLToPath } from 'node:url';
import { run } from './proc.ts';
import { raiseNofile } from './rota.ts';

/**
 * The harness side of the tunnel load generator (bench/lib/tunnel-load.ts), which runs in a process of
 * its own so that it never shares an event loop with the target or anything it measures.
 */
const LOADGEN = fileURLToPath(new URL('./tunnel-load.ts', import.meta.url));
/** File descriptors for the load generator: 5,000 idle tunnels need 5,000 plus a few. */
const NOFILE = 65_536;

/** New tunnels per second, each carrying one GET: `loops` concurrent open-CONNECT-GET-close loops. */
export interface RateJob {
  readonly mode: 'rate';
  readonly proxyPort: number;
  /** host:port of the target, for CONNECT and the Host header. */
  readonly authority: string;
  readonly path: string;
  readonly loops: number;
  readonly durationS: number;
  /** Upper bound on tunnels opened, whatever the duration. */
  readonly maxTunnels: number;
}

/** Repeated downloads of `path` through one tunnel for `durationS` (at least one). */
export interface BulkJob {
  readonly mode: 'bulk';
  readonly proxyPort: number;
  readonly authority: string;
  readonly path: string;
  readonly durationS: number;
}

/** `count` tunnels opened and held idle for `holdS`, the proxy process `pid` watched (RSS, fds). */
export interface IdleJob {
  readonly mode: 'idle';
  readonly proxyPort: number;
  readonly authority: string;
  readonly path: string;
  readonly count: number;
  readonly holdS: number;
  readonly openConcurrency: number;
  readonly pid: number | null;
}

export type Job = RateJob | BulkJob | IdleJob;

/** Failures by kind (`timeout`, `closed`, `status 502`, `socket`...). */
export type Failures = Record<string, number>;

export interface RateResult {
  readonly tunnels: number;
  readonly failed: Failures;
  readonly durationS: number;
  readonly perS: number;
  /** From the TCP connect to the last byte of the answer, per tunnel. */
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** The load generator's own CPU per tunnel, µs. */
  readonly loadgenUs: number;
  /** Completed tunnels whose CONNECT answer carried X-Rota-Proxy-Id. */
  readonly withProxyId: number;
}

export interface BulkResult {
  readonly bytes: number;
  readonly seconds: number;
  readonly mibps: number;
  readonly downloads: number;
  readonly failed: Failures;
}

export interface IdleResult {
  /** Tunnels the proxy answered with a 2xx. */
  readonly answered: number;
  /** Of those, answers that carried X-Rota-Proxy-Id. */
  readonly withProxyId: number;
  readonly failed: Failures;
  readonly openMs: number;
  readonly rssBeforeMb: number | null;
  readonly rssOpenMb: number | null;
  readonly rssPeakMb: number | null;
  readonly fdBefore: number | null;
  readonly fdOpen: number | null;
  /** Descriptors after closing every tunnel, once back at `fdBefore` or after the wait ran out. */
  readonly fdAfter: number | null;
  /** Time from closing the last tunnel until the proxy was back at `fdBefore`; null if it never was. */
  readonly fdReleaseMs: number | null;
  /** Tunnels that still carried a GET and its 200 after the hold. */
  readonly usable: number;
}

export type ResultOf<J extends Job> = J extends RateJob
  ? RateResult
  : J extends BulkJob
    ? BulkResult
    : IdleResult;

export const RESULT_PREFIX = 'TUNNEL_JSON ';

/** Runs one job in a fresh load-generator process (descriptor limit raised); returns its figures. */
export async function runTunnelLoad<J extends Job>(job: J): Promise<ResultOf<J>> {
  const limitS = job.mode === 'idle' ? job.holdS + 240 : job.durationS + 90;
  const script = `${raiseNofile(NOFILE)}; exec "$0" "$@"`;
  const r = await run('bash', ['-c', script, process.execPath, LOADGEN, JSON.stringify(job)], {
    timeoutMs: limitS * 1000,
  });
  const line = r.stdout.split('\n').find((l) => l.startsWith(RESULT_PREFIX));
  if (r.code !== 0 || !line) {
    const why = (r.stderr || r.stdout).trim().slice(-300) || 'no output';
    throw new Error(`tunnel load generator failed (exit ${r.code}): ${why}`);
  }
  return JSON.parse(line.slice(RESULT_PREFIX.length)) as ResultOf<J>;
}

/** "12 timeout, 3 status 502", or "none". */
export function failuresText(f: Failures): string {
  const parts = Object.entries(f).map(([kind, n]) => `${n} ${kind}`);
  return parts.length > 0 ? parts.join(', ') : 'none';
}

export function failureCount(f: Failures): number {
  return Object.values(f).reduce((a, b) => a + b, 0);
}
