import http from 'node:http';
import type { Ctx } from './context.ts';
import { sleep } from './proc.ts';
import { api, GENEROUS, type Rota, startRota } from './rota.ts';

/**
 * Small steps of workloads 9-11 on a running Rota: start one with its listeners off, import a pool in
 * one call, read the cool-down table, and drive calls until a host has banned enough proxies.
 */

/**
 * Rota as the other workloads start it (bench/lib/rota.ts), with the two listeners off (so that several
 * can run at once and none depends on ports 8080/1080 being free) and any extra settings.
 */
export function startRotaNoListeners(
  ctx: Ctx,
  name: string,
  env: Record<string, string> = {},
): Promise<Rota> {
  return startRota({
    name,
    workDir: ctx.workDir,
    nodeFlags: ctx.rotaNodeFlags,
    env: { ROTA_PROXY_PORT: '0', ROTA_SOCKS_PORT: '0', ROTA_RATE_LIMIT_CONFIG: GENEROUS, ...env },
  });
}

/** `POST /api/v1/proxies/import` with text lines (`host:port:user:pass`); returns how many were created. */
export async function importProxies(base: string, lines: readonly string[]): Promise<number> {
  const r = await fetch(`${base}/api/v1/proxies/import?protocol=http`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: `${lines.join('\n')}\n`,
  });
  const json = (await r.json()) as { data?: { created?: number; invalid_count?: number } };
  if (r.status !== 200 || json.data?.created === undefined) {
    throw new Error(`import answered ${r.status}: ${JSON.stringify(json).slice(0, 300)}`);
  }
  return json.data.created;
}

/** Active cool-downs for `host` (GET bans total). */
export async function banTotal(base: string, host: string): Promise<number> {
  const r = await api(base, 'GET', `/api/v1/bans?host=${host}&page_size=1`);
  const total = (r.json as { data?: { total?: number } }).data?.total;
  if (r.status !== 200 || total === undefined) throw new Error(`GET bans answered ${r.status}`);
  return total;
}

/** Every proxy id cooling down for `host`, read page by page. */
export async function cooledIds(base: string, host: string): Promise<Set<string>> {
  const ids = new Set<string>();
  for (let page = 1; page <= 2_000; page++) {
    const r = await api(base, 'GET', `/api/v1/bans?host=${host}&page=${page}&page_size=100`);
    const d = (r.json as { data?: { items?: { proxy_id: string }[]; has_next?: boolean } }).data;
    for (const c of d?.items ?? []) ids.add(c.proxy_id);
    if (!d?.has_next) break;
  }
  return ids;
}

/** One POST request call with a kept-alive agent; resolves with the HTTP status. */
function call(agent: http.Agent, base: URL, body: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        method: 'POST',
        path: '/api/v1/request',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        timeout: 30_000,
      },
      (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.once('error', () => resolve(0));
    req.once('timeout', () => req.destroy());
    req.end(body);
  });
}

export interface DriveResult {
  readonly calls: number;
  readonly seconds: number;
  readonly cooled: number;
  readonly failedCalls: number;
}

/**
 * POST request calls to `targetUrl` (a site that bans every proxy), `concurrency` at a time, until GET
 * bans for `host` counts `want` cool-downs; bounded by `maxCalls` and `maxS`.
 */
export async function driveUntilBanned(o: {
  readonly base: string;
  readonly targetUrl: string;
  readonly host: string;
  readonly want: number;
  readonly concurrency: number;
  readonly maxCalls: number;
  readonly maxS: number;
}): Promise<DriveResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.concurrency });
  const body = JSON.stringify({ url: o.targetUrl, method: 'GET' });
  const base = new URL(o.base);
  const t0 = performance.now();
  let calls = 0;
  let failedCalls = 0;
  let cooled = 0;
  let done = false;
  const worker = async () => {
    while (!done && calls < o.maxCalls && performance.now() - t0 < o.maxS * 1000) {
      calls++;
      if ((await call(agent, base, body)) !== 200) failedCalls++;
    }
  };
  const watcher = async () => {
    while (!done && calls < o.maxCalls && performance.now() - t0 < o.maxS * 1000) {
      cooled = await banTotal(o.base, o.host);
      if (cooled >= o.want) done = true;
      else await sleep(100);
    }
    done = true;
  };
  try {
    await Promise.all([watcher(), ...Array.from({ length: o.concurrency }, worker)]);
    cooled = await banTotal(o.base, o.host);
  } finally {
    agent.destroy();
  }
  return { calls, seconds: (performance.now() - t0) / 1000, cooled, failedCalls };
}
