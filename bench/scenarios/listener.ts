import { forwardOptions, type Measured, measureTunnels, measureWrk } from '../lib/measure.ts';
import { type Forward, startForwards } from '../lib/refs.ts';
import { alone, type Ctx, type Row, type ScenarioResult, versus } from '../lib/report.ts';
import type { TunnelResult } from '../lib/tunnels.ts';
import { goodput, pooled, type WrkResult } from '../lib/wrk.ts';

/**
 * Rota's HTTP forward-proxy listener (ROTA_PROXY_PORT) against squid itself (direct), Apify proxy-chain
 * (bench/reference/proxy-chain.ts) and the forward relay (bench/reference/forward-relay.ts: the least a
 * forward proxy on Rota's stack can do), every one chained to the same squid, measured one at a time.
 *
 *   wrk / tunnels ──▶ squid ──▶ target                                       (direct)
 *   wrk / tunnels ──▶ Rota | proxy-chain | relay ──▶ squid (10 ports) ──▶ target
 */
type Name = Forward['name'];
type Results<T> = Map<Name, Measured<T>>;

/** Starts the four proxies, measures each with `each` (direct again at the end when `directAfter`). */
async function eachForward<T>(
  ctx: Ctx,
  each: (f: Forward) => Promise<Measured<T>>,
  directAfter: (a: T, b: T) => T,
): Promise<Results<T>> {
  const squid = { ports: ctx.squid.ports, pid: ctx.squid.proc.pid };
  const forwards = await startForwards(ctx.workDir, squid, ctx.target.jsonUrl, ctx.rotaFlags);
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

function pick<T>(r: Results<T>, name: Name, f: (m: Measured<T>) => number | null): number | null {
  const m = r.get(name);
  return m === undefined ? null : f(m);
}

const proxyCpu = <T>(m: Measured<T>) => m.cpu.perCallUs.subject ?? null;

/** Absolute-URI GETs of the small JSON at 50 connections, then the added latency at 1 connection. */
export async function get(ctx: Ctx): Promise<ScenarioResult> {
  const url = ctx.target.jsonUrl;
  const run = (connections: number) => (f: Forward) =>
    measureWrk(ctx, { ...forwardOptions(f.port, url), connections }, f.name === 'direct' ? null : f.pid);
  ctx.log('  absolute-URI GET, 50 connections');
  const many = await eachForward(ctx, run(50), pooled);
  ctx.log('  absolute-URI GET, 1 connection');
  const one = await eachForward(ctx, run(1), pooled);
  const rps = (r: Results<WrkResult>, n: Name) => pick(r, n, (m) => goodput(m.load));
  const p50 = (r: Results<WrkResult>, n: Name) => pick(r, n, (m) => m.load.p50Ms);
  const S = 'Absolute-URI GET';
  const added = (p50(one, 'rota') ?? Number.NaN) - (p50(one, 'direct') ?? Number.NaN);
  const rows: Row[] = [
    versus(S, 'req/s, 50 conns', rps(many, 'rota'), 'proxy-chain', rps(many, 'proxy-chain'), { min: 1.2 }),
    versus(S, 'req/s, 50 conns', rps(many, 'rota'), 'direct', rps(many, 'direct'), { min: 0.5 }),
    versus(S, 'req/s, 50 conns', rps(many, 'rota'), 'forward relay', rps(many, 'relay'), { min: 0.85 }),
    versus(
      S,
      'proxy CPU µs per GET',
      pick(many, 'rota', proxyCpu),
      'forward relay',
      pick(many, 'relay', proxyCpu),
    ),
    versus(
      S,
      'proxy CPU µs per GET',
      pick(many, 'rota', proxyCpu),
      'proxy-chain',
      pick(many, 'proxy-chain', proxyCpu),
    ),
    versus(S, 'p50 ms, 1 conn', p50(one, 'rota'), 'proxy-chain', p50(one, 'proxy-chain')),
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

/** New CONNECT tunnels per second: 50 loops of connect, CONNECT, one GET of the small JSON, close. */
export async function connect(ctx: Ctx): Promise<ScenarioResult> {
  const authority = new URL(ctx.target.jsonUrl).host;
  ctx.log('  CONNECT tunnels/s, 50 loops');
  const r = await eachForward(
    ctx,
    (f) =>
      measureTunnels(
        ctx,
        { mode: 'rate', proxyPort: f.port, authority, path: '/json', loops: 50 },
        f.name === 'direct' ? null : f.pid,
      ),
    pooledTunnels,
  );
  const perS = (n: Name) => pick(r, n, (m) => m.load.perS);
  const S = 'CONNECT tunnels';
  return {
    rows: [
      versus(S, 'tunnels/s', perS('rota'), 'proxy-chain', perS('proxy-chain'), { min: 1.2 }),
      versus(S, 'tunnels/s', perS('rota'), 'forward relay', perS('relay')),
      versus(S, 'tunnels/s', perS('rota'), 'direct', perS('direct')),
      versus(
        S,
        'proxy CPU µs per tunnel',
        pick(r, 'rota', proxyCpu),
        'forward relay',
        pick(r, 'relay', proxyCpu),
      ),
      versus(
        S,
        'proxy CPU µs per tunnel',
        pick(r, 'rota', proxyCpu),
        'proxy-chain',
        pick(r, 'proxy-chain', proxyCpu),
      ),
    ],
    raw: Object.fromEntries(r),
  };
}

/** One tunnel, 64 MiB streamed by the target again and again for 10 s (at most the load duration). */
export async function bulk(ctx: Ctx): Promise<ScenarioResult> {
  const authority = new URL(ctx.target.jsonUrl).host;
  const path = `/stream?bytes=${64 * 1024 * 1024}`;
  const seconds = Math.min(10, ctx.loadS);
  ctx.log(`  bulk through one tunnel, ${seconds} s`);
  const r = await eachForward(
    ctx,
    (f) =>
      measureTunnels(
        ctx,
        { mode: 'bulk', proxyPort: f.port, authority, path },
        f.name === 'direct' ? null : f.pid,
        seconds,
      ),
    pooledTunnels,
  );
  const mibps = (n: Name) => pick(r, n, (m) => m.load.mibps);
  const S = 'Bulk through a tunnel';
  return {
    rows: [
      versus(S, 'MiB/s', mibps('rota'), 'direct', mibps('direct'), { min: 0.9 }),
      versus(S, 'MiB/s', mibps('rota'), 'forward relay', mibps('relay')),
      versus(S, 'MiB/s', mibps('rota'), 'proxy-chain', mibps('proxy-chain')),
    ],
    raw: Object.fromEntries(r),
  };
}
