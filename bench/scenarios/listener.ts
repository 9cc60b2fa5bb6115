import { forwardOptions, type Measured, measureTunnels, measureWrk, subjectCpu } from '../lib/measure.ts';
import { type Forward, startForwards } from '../lib/refs.ts';
import { alone, type Bound, type Ctx, type Row, type ScenarioResult, versus } from '../lib/report.ts';
import type { TunnelJob, TunnelResult } from '../lib/tunnels.ts';
import { goodput, pooled } from '../lib/wrk.ts';

/**
 * Rota's HTTP forward-proxy listener (ROTA_PROXY_PORT) against squid itself (direct), Apify proxy-chain
 * and the forward relay (bench/reference), every one chained to the same squid, measured one at a time.
 *
 *   wrk / tunnels ──▶ squid ──▶ target                                       (direct)
 *   wrk / tunnels ──▶ Rota | proxy-chain | relay ──▶ squid (10 ports) ──▶ target
 */
type Name = Forward['name'];
type Results<T> = Map<Name, Measured<T>>;
type Each<T> = (f: Forward) => Promise<Measured<T>>;
/** The process whose CPU and RSS are read: none for squid itself (it is shared, and read anyway). */
const subject = (f: Forward) => (f.name === 'direct' ? null : f.pid);

/** Starts the four proxies, measures each with `each`, then direct again, pooled with its first run. */
async function eachForward<T>(ctx: Ctx, each: Each<T>, directAfter: (a: T, b: T) => T): Promise<Results<T>> {
  const forwards = await startForwards(ctx);
  const out: Results<T> = new Map();
  try {
    for (const f of forwards) {
      ctx.log(`    ${f.name}`);
      out.set(f.name, await each(f));
    }
    const first = out.get('direct')!;
    const again = await each(forwards[0]!);
    out.set('direct', { ...first, load: directAfter(first.load, again.load) });
  } finally {
    await Promise.all(forwards.map((f) => f.stop()));
  }
  return out;
}

/** Rows of Rota's figure `f` against each reference of `refs`, with its target if any. */
function against<T>(S: string, metric: string, r: Results<T>, f: (m: Measured<T>) => number | null) {
  const of = (n: Name) => (r.has(n) ? f(r.get(n)!) : null);
  return (...refs: Array<[Name, Bound?]>): Row[] =>
    refs.map(([n, bound]) => versus(S, metric, of('Rota'), n, of(n), bound));
}

/** Absolute-URI GETs of the small JSON at 50 connections, then the added latency at 1 connection. */
export async function get(ctx: Ctx): Promise<ScenarioResult> {
  const url = ctx.target.jsonUrl;
  const run = (connections: number) => (f: Forward) =>
    measureWrk(ctx, { ...forwardOptions(f.port, url), connections }, subject(f));
  ctx.log('  absolute-URI GET, 50 connections');
  const many = await eachForward(ctx, run(50), pooled);
  ctx.log('  absolute-URI GET, 1 connection');
  const one = await eachForward(ctx, run(1), pooled);
  const S = 'Absolute-URI GET';
  const p50 = (n: Name) => one.get(n)?.load.p50Ms ?? Number.NaN;
  const added = p50('Rota') - p50('direct');
  const rows: Row[] = [
    ...against(S, 'req/s, 50 conns', many, (m) => goodput(m.load))(
      ['proxy-chain', { min: 1.2 }],
      ['direct', { min: 0.5 }],
      ['forward relay', { min: 0.85 }],
    ),
    ...against(S, 'proxy CPU µs per GET', many, subjectCpu)(['forward relay'], ['proxy-chain']),
    ...against(S, 'p50 ms, 1 conn', one, (m) => m.load.p50Ms)(['proxy-chain']),
    alone(S, 'added p50 ms, 1 conn', Number.isFinite(added) ? added : null, { max: 0.2 }),
  ];
  return { rows, raw: { connections50: Object.fromEntries(many), connections1: Object.fromEntries(one) } };
}

/** Both direct runs of a tunnel load as one (the rates over both; latencies are the first run's). */
function pooledTunnels(a: TunnelResult, b: TunnelResult): TunnelResult {
  const [done, bytes, seconds] = [a.done + b.done, a.bytes + b.bytes, a.seconds + b.seconds];
  const mibps = bytes / 1024 / 1024 / seconds;
  return { ...a, done, failed: a.failed + b.failed, seconds, perS: done / seconds, bytes, mibps };
}

/** A CONNECT load (bench/lib/tunnels.ts) through each forward proxy to the target. */
function tunnelRuns(ctx: Ctx, job: Pick<TunnelJob, 'mode' | 'path' | 'loops'>, seconds?: number) {
  const authority = new URL(ctx.target.jsonUrl).host;
  const each = (f: Forward) =>
    measureTunnels(ctx, { ...job, authority, proxyPort: f.port }, subject(f), seconds);
  return eachForward(ctx, each, pooledTunnels);
}

/** New CONNECT tunnels per second: 50 loops of connect, CONNECT, one GET of the small JSON, close. */
export async function connect(ctx: Ctx): Promise<ScenarioResult> {
  ctx.log('  CONNECT tunnels/s, 50 loops');
  const r = await tunnelRuns(ctx, { mode: 'rate', path: '/json', loops: 50 });
  const S = 'CONNECT tunnels';
  const perS = against(S, 'tunnels/s', r, (m) => m.load.perS);
  const rows = [
    ...perS(['proxy-chain', { min: 1.2 }], ['forward relay'], ['direct']),
    ...against(S, 'proxy CPU µs per tunnel', r, subjectCpu)(['forward relay'], ['proxy-chain']),
  ];
  return { rows, raw: Object.fromEntries(r) };
}

/** One tunnel, 64 MiB streamed by the target again and again for 10 s (at most the load duration). */
export async function bulk(ctx: Ctx): Promise<ScenarioResult> {
  const seconds = Math.min(10, ctx.loadS);
  ctx.log(`  bulk through one tunnel, ${seconds} s`);
  const r = await tunnelRuns(ctx, { mode: 'bulk', path: `/stream?bytes=${64 * 1024 * 1024}` }, seconds);
  const mibps = against('Bulk through a tunnel', 'MiB/s', r, (m) => m.load.mibps);
  const rows = mibps(['direct', { min: 0.9 }], ['forward relay'], ['proxy-chain']);
  return { rows, raw: Object.fromEntries(r) };
}
