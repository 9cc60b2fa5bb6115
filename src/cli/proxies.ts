/**
 * `rota proxies add|list|rm|export`: thin calls of the REST API, printed as tables or (`--json`) as the
 * server's own data. Import lives in import.ts.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type ApiClient, CliError, EXIT_OK, EXIT_PARTIAL, ensureOk } from './client.ts';
import { type Out, percent, printTable } from './output.ts';

/** A proxy as the API shows it (never with credentials). */
export interface ProxyView {
  id: string;
  url: string;
  protocol: string;
  status: string;
  health: string;
  weight: number;
  country: string | null;
  tags: string[];
  has_credentials: boolean;
  /** The operator's label, else the username's non-secret part (never a password). */
  display_label?: string | null;
  stats: { total_requests: number; successful_requests: number; avg_latency_ms: number };
}

interface Page {
  items: ProxyView[];
  total: number;
  page: number;
  page_size: number;
}

const HEADERS = [
  'ID',
  'URL',
  'LABEL',
  'STATUS',
  'HEALTH',
  'WEIGHT',
  'COUNTRY',
  'AUTH',
  'REQUESTS',
  'SUCCESS',
  'TAGS',
];

function row(p: ProxyView): unknown[] {
  const s = p.stats;
  return [
    p.id,
    p.url,
    p.display_label ?? '',
    p.status,
    p.health,
    p.weight,
    p.country,
    p.has_credentials ? 'yes' : 'no',
    s.total_requests,
    percent(s.successful_requests, s.total_requests),
    p.tags.join(','),
  ];
}

export interface AddOptions {
  country?: string;
  weight?: number;
  tag?: string[];
}

export async function addProxy(api: ApiClient, out: Out, json: boolean, url: string, o: AddOptions) {
  const body = {
    url,
    ...(o.country === undefined ? {} : { country: o.country }),
    ...(o.weight === undefined ? {} : { weight: o.weight }),
    ...(o.tag === undefined ? {} : { tags: o.tag }),
  };
  const { data } = await api.call<ProxyView>('POST', '/api/v1/proxies', { json: body });
  if (json) out.json(data);
  else printTable(out, HEADERS, [row(data)]);
  return EXIT_OK;
}

export interface ListOptions {
  page: number;
  pageSize: number;
  status?: string;
}

export async function listProxies(api: ApiClient, out: Out, json: boolean, o: ListOptions) {
  const q = new URLSearchParams({ page: String(o.page), page_size: String(o.pageSize) });
  if (o.status) q.set('status_filter', o.status);
  const { data } = await api.call<Page>('GET', `/api/v1/proxies?${q}`);
  if (json) {
    out.json(data);
    return EXIT_OK;
  }
  printTable(out, HEADERS, data.items.map(row));
  const pages = Math.max(1, Math.ceil(data.total / data.page_size));
  out.note(`page ${data.page} of ${pages}, ${data.total} ${data.total === 1 ? 'proxy' : 'proxies'}`);
  return EXIT_OK;
}

export async function removeProxies(api: ApiClient, out: Out, json: boolean, ids: readonly string[]) {
  const removed: string[] = [];
  const failed: { id: string; code: string; message: string }[] = [];
  for (const id of ids) {
    try {
      await api.call('DELETE', `/api/v1/proxies/${encodeURIComponent(id)}`);
      removed.push(id);
    } catch (err) {
      if (!(err instanceof CliError) || err.code === 'CONNECTION_FAILED') throw err;
      failed.push({ id, code: err.code, message: err.message });
    }
  }
  if (json) out.json({ removed, failed });
  else {
    for (const id of removed) out.line(`removed ${id}`);
    for (const f of failed) out.note(`${f.code}: ${f.message} (${f.id})`);
  }
  return failed.length === 0 ? EXIT_OK : EXIT_PARTIAL;
}

/**
 * NDJSON, streamed from the server to stdout as it comes (100,000 proxies are never held whole); with
 * credentials, a backup that `rota proxies import` restores.
 */
export async function exportProxies(api: ApiClient, status: string | undefined, credentials = false) {
  const q = new URLSearchParams();
  if (status) q.set('status_filter', status);
  if (credentials) q.set('credentials', 'true');
  const query = q.size === 0 ? '' : `?${q}`;
  const res = await api.send('GET', `/api/v1/proxies/export${query}`);
  await ensureOk(res);
  if (!res.body) return EXIT_OK;
  try {
    await pipeline(Readable.fromWeb(res.body), process.stdout);
  } catch (err) {
    // The reader went away (`rota proxies export | head`): not a failure of the export.
    if ((err as { code?: unknown }).code !== 'EPIPE') throw err;
  }
  return EXIT_OK;
}

/** Every proxy, by the export stream (one request, whatever the pool size). */
export async function allProxies(api: ApiClient): Promise<ProxyView[]> {
  const res = await api.send('GET', '/api/v1/proxies/export');
  await ensureOk(res);
  const text = await res.text();
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as ProxyView);
}
