/**
 * `rota check [ID...]` health-checks proxies (all by default) through POST proxies/health-check, in a
 * few batches so that a terminal can show progress, waiting out the route's rate limit if it is hit;
 * exit 1 when any proxy failed. `rota status` shows the pool and, when the server has them, the listeners.
 */
import { type ApiClient, EXIT_OK, EXIT_PARTIAL } from './client.ts';
import { type Out, printTable, progress, table } from './output.ts';
import { allProxies } from './proxies.ts';

interface CheckResult {
  proxy_id: string;
  url?: string;
  status: 'working' | 'failed';
  latency_ms: number;
  error: string | null;
  tested_at?: string;
}

/** The API takes at most 1,000 ids a call; a few calls are enough for a bar to move. */
const MAX_BATCH = 1000;
const BATCHES = 5;
const IN_FLIGHT = 2;
const MAX_WAIT_S = 120;

function batches<T>(items: readonly T[]): T[][] {
  const size = Math.min(MAX_BATCH, Math.max(1, Math.ceil(items.length / BATCHES)));
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** One batch; a 429 is waited out (Retry-After) rather than reported as a failure. */
async function checkBatch(api: ApiClient, ids: readonly string[]): Promise<CheckResult[]> {
  for (;;) {
    const res = await api.call<CheckResult[]>('POST', '/api/v1/proxies/health-check', {
      json: { proxy_ids: ids },
      accept: [429],
    });
    if (res.status !== 429) return res.data;
    const wait = Math.min(MAX_WAIT_S, Number(res.headers.get('retry-after')) || 5);
    await new Promise((r) => setTimeout(r, wait * 1000));
  }
}

export async function checkProxies(api: ApiClient, out: Out, json: boolean, only: readonly string[]) {
  const known = new Map((await allProxies(api)).map((p) => [p.id, p.url]));
  const ids = only.length > 0 ? [...new Set(only)] : [...known.keys()];
  const found = ids.filter((id) => known.has(id));
  const bar = found.length > 0 ? progress('Checking', found.length, 'proxies') : null;
  const byId = new Map<string, CheckResult>();
  let done = 0;
  try {
    const queue = batches(found);
    const worker = async () => {
      for (let b = queue.shift(); b; b = queue.shift()) {
        for (const r of await checkBatch(api, b)) byId.set(r.proxy_id, r);
        done += b.length;
        bar?.update(done);
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  } finally {
    bar?.stop();
  }
  const results: CheckResult[] = ids.map(
    (id) =>
      byId.get(id) ?? {
        proxy_id: id,
        status: 'failed',
        latency_ms: 0,
        error: 'no such proxy (or removed meanwhile)',
      },
  );
  for (const r of results) r.url = known.get(r.proxy_id) ?? r.url;
  const failed = results.filter((r) => r.status !== 'working').length;
  if (json) out.json(results);
  else if (results.length === 0) out.note('no proxies to check');
  else {
    printTable(
      out,
      ['ID', 'URL', 'RESULT', 'LATENCY', 'ERROR'],
      results.map((r) => [r.proxy_id, r.url, r.status, `${Math.round(r.latency_ms)} ms`, r.error]),
    );
    out.note(`${results.length} checked: ${results.length - failed} working, ${failed} failed`);
  }
  return failed > 0 ? EXIT_PARTIAL : EXIT_OK;
}

interface StatusView {
  pool_stats: {
    total: number;
    active: number;
    failed: number;
    healthy_percentage: number;
    /** Proxies whose health is known (absent from older servers). */
    checked?: number;
    last_rotation: string | null;
  };
  rotation_strategy: string;
  storage_backend: string;
  config_source?: string;
}

interface ListenerView {
  name: string;
  enabled: boolean;
  address: string | null;
  port: number | null;
  open_tunnels: number;
  totals: Record<string, { requests: number; refused: number }>;
}

/** The healthy share of the proxies whose health is known; never a share of proxies never tried. */
function healthShare(p: StatusView['pool_stats']): string {
  if (p.checked === undefined) return `${p.healthy_percentage}% healthy`;
  if (p.checked === 0) return 'none checked yet';
  return `${p.healthy_percentage}% healthy of ${p.checked} checked`;
}

export async function showStatus(api: ApiClient, out: Out, json: boolean) {
  const { data: status } = await api.call<StatusView>('GET', '/api/v1/status');
  // Older servers have no listeners endpoint: the status alone is still an answer.
  const l = await api.call<{ listeners: ListenerView[] } | null>('GET', '/api/v1/listeners', {
    accept: [404],
  });
  const listeners = l.status === 200 ? (l.data?.listeners ?? null) : null;
  if (json) {
    out.json({ status, listeners });
    return EXIT_OK;
  }
  const p = status.pool_stats;
  const pairs = [
    ['pool', `${p.total} proxies: ${p.active} active, ${p.failed} failed, ${healthShare(p)}`],
    ['strategy', status.rotation_strategy],
    ['storage', status.storage_backend],
    ['config source', status.config_source],
    ['last rotation', p.last_rotation],
  ];
  for (const line of table(['', ''], pairs).slice(1)) out.line(line);
  if (listeners) {
    out.line();
    printTable(
      out,
      ['LISTENER', 'ENABLED', 'ADDRESS', 'OPEN TUNNELS', 'REQUESTS', 'REFUSED'],
      listeners.map((x) => {
        const totals = Object.values(x.totals);
        const sum = (k: 'requests' | 'refused') => totals.reduce((a, t) => a + t[k], 0);
        const address = x.address === null ? null : `${x.address}:${x.port}`;
        return [x.name, x.enabled ? 'yes' : 'no', address, x.open_tunnels, sum('requests'), sum('refused')];
      }),
    );
  }
  return EXIT_OK;
}
