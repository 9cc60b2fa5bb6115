import type { Ctx } from '../lib/context.ts';
import { sleep } from '../lib/proc.ts';
import { api, requestBody } from '../lib/rota.ts';
import { type WrkResult, wrk } from '../lib/wrk.ts';
import type { Cluster } from './shared-cluster.ts';

/**
 * Workload 10's propagation: under the 50-connection load through nginx, a change made on instance 1
 * (its own port) and polled for on instances 2 and 3 (theirs) until it shows. Two kinds of change, each
 * `changes` times: `PUT config` switching rotation_strategy (random ⇄ round-robin; seen when GET config
 * shows it), and `POST proxies` (seen when GET proxies/{id} answers 200). Times run from just before the
 * write is sent, so they include the write itself; a change not seen within 5 s counts as 5 s or more.
 */
interface Seen {
  /** ms per observation (instances 2 and 3 for each change); Infinity: not seen within the bound. */
  config: number[];
  proxy: number[];
  /** ms the write took on instance 1. */
  writeMs: number[];
  changesMade: number;
}

export interface Propagation extends Readonly<Seen> {
  readonly load: WrkResult;
}

const SEEN_WITHIN_MS = 5_000;

async function seenOn(base: string, t0: number, check: (base: string) => Promise<boolean>): Promise<number> {
  for (;;) {
    if (await check(base)) return performance.now() - t0;
    if (performance.now() - t0 > SEEN_WITHIN_MS) return Number.POSITIVE_INFINITY;
    await sleep(1);
  }
}

async function configChange(c: Cluster, i: number, out: Seen): Promise<void> {
  const want = i % 2 === 0 ? 'random' : 'round-robin';
  const [origin, ...others] = c.instances;
  const t0 = performance.now();
  const w = await api(origin!.base, 'PUT', '/api/v1/config', { rotation_strategy: want });
  if (w.status !== 200) throw new Error(`PUT config answered ${w.status}`);
  out.writeMs.push(performance.now() - t0);
  const check = async (base: string) => {
    const r = await api(base, 'GET', '/api/v1/config');
    return (r.json as { data?: { rotation_strategy?: string } }).data?.rotation_strategy === want;
  };
  out.config.push(...(await Promise.all(others.map((o) => seenOn(o.base, t0, check)))));
}

async function proxyChange(c: Cluster, i: number, port: number, out: Seen): Promise<void> {
  const [origin, ...others] = c.instances;
  const t0 = performance.now();
  const body = { url: `http://127.0.0.1:${port}`, username: `propagation-${i}`, password: 'pw' };
  const w = await api(origin!.base, 'POST', '/api/v1/proxies', body);
  const id = (w.json as { data?: { id?: string } }).data?.id;
  if (w.status !== 201 || id === undefined) throw new Error(`POST proxies answered ${w.status}`);
  out.writeMs.push(performance.now() - t0);
  const check = async (base: string) => (await api(base, 'GET', `/api/v1/proxies/${id}`)).status === 200;
  out.proxy.push(...(await Promise.all(others.map((o) => seenOn(o.base, t0, check)))));
}

export async function measurePropagation(
  ctx: Ctx,
  c: Cluster,
  ports: readonly number[],
  changes: number,
): Promise<Propagation> {
  const loadS = ctx.quick ? 12 : 30;
  const load = wrk({
    url: `${c.base}/api/v1/request`,
    method: 'POST',
    body: requestBody(ctx.target.jsonUrl),
    headers: { 'Content-Type': 'application/json' },
    connections: 50,
    durationS: loadS,
    timeoutS: 30,
  });
  const out: Seen = { config: [], proxy: [], writeMs: [], changesMade: 0 };
  const t0 = performance.now();
  let failure: unknown = null;
  try {
    await sleep(2_000);
    // Only changes made while the load runs count (2 s of margin before wrk stops).
    for (let i = 0; i < changes && performance.now() - t0 < (loadS - 2) * 1000; i++) {
      await configChange(c, i, out);
      await proxyChange(c, i, ports[i % ports.length]!, out);
      out.changesMade++;
    }
  } catch (e) {
    failure = e;
  }
  const result = await load;
  if (failure !== null) throw failure;
  return { ...out, load: result };
}
