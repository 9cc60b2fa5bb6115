/**
 * The dashboard's pool table, paged, sorted and filtered on the server so that a page of 100,000 proxies
 * stays a few kilobytes: one pass over the pool to filter, one sort of indices over typed keys (no row
 * object is built for a proxy that is not on the page), and only the page's rows rendered.
 */
import type { BreakerStateName } from '../breaker/types.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import { HEALTH_VALUES, type Health, type Protocol } from '../pool/types.ts';
import type { Services } from '../services.ts';

export const SORT_KEYS = [
  'created',
  'url',
  'protocol',
  'country',
  'health',
  'breaker',
  'success_rate',
  'p50_ms',
  'in_flight',
] as const;
export type SortKey = (typeof SORT_KEYS)[number];

export const BREAKER_STATES = ['closed', 'half-open', 'open'] as const;

export interface TableQuery {
  page: number;
  page_size: number;
  sort: SortKey;
  order: 'asc' | 'desc';
  q?: string | undefined;
  breaker?: BreakerStateName | undefined;
  health?: Health | undefined;
}

export interface TableRow {
  id: string;
  url: string;
  protocol: Protocol;
  country: string | null;
  health: Health;
  breaker: BreakerStateName;
  attempts: number;
  success_rate: number | null;
  p50_ms: number | null;
  in_flight: number;
}

export interface TablePage {
  items: TableRow[];
  /** Proxies matching the filters. */
  total: number;
  /** Proxies in the pool. */
  pool_size: number;
  page: number;
  page_size: number;
  has_next: boolean;
}

type Deps = Pick<Services, 'pool' | 'breakers' | 'series'>;

const HEALTH_RANK = new Map<string, number>(HEALTH_VALUES.map((h, i) => [h, i]));
const BREAKER_RANK = new Map<string, number>(BREAKER_STATES.map((s, i) => [s, i]));

function matcher(d: Deps, q: TableQuery): ((e: ProxyEntry) => boolean) | null {
  const needle = q.q?.trim().toLowerCase() ?? '';
  if (needle === '' && q.breaker === undefined && q.health === undefined) return null;
  return (e) =>
    (q.health === undefined || e.health === q.health) &&
    (q.breaker === undefined || d.breakers.state(e.record.id) === q.breaker) &&
    (needle === '' ||
      e.url.includes(needle) ||
      e.record.id.includes(needle) ||
      (e.record.country?.toLowerCase() === needle));
}

/** A numeric key per entry, or null for the keys compared as text. */
function numericKey(d: Deps, sort: SortKey): ((e: ProxyEntry) => number) | null {
  switch (sort) {
    case 'health':
      return (e) => HEALTH_RANK.get(e.health) ?? 0;
    case 'breaker':
      return (e) => BREAKER_RANK.get(d.breakers.state(e.record.id)) ?? 0;
    case 'success_rate':
      return (e) => d.series.successRate(e.record.id);
    case 'p50_ms':
      return (e) => d.series.medianLatency(e.record.id);
    case 'in_flight':
      return (e) => e.inFlight;
    default:
      return null;
  }
}

function textKey(sort: SortKey): (e: ProxyEntry) => string {
  if (sort === 'protocol') return (e) => e.record.protocol;
  if (sort === 'country') return (e) => e.record.country ?? '';
  return (e) => e.url;
}

/** Positions (into `rows`) in the requested order; ties keep creation order whatever the direction. */
function ordered(d: Deps, rows: readonly ProxyEntry[], q: TableQuery): Uint32Array {
  const idx = new Uint32Array(rows.length);
  for (let i = 0; i < idx.length; i++) idx[i] = i;
  const dir = q.order === 'desc' ? -1 : 1;
  if (q.sort === 'created') return dir === 1 ? idx : idx.reverse();
  const num = numericKey(d, q.sort);
  if (num) {
    const keys = new Float64Array(rows.length);
    for (let i = 0; i < rows.length; i++) keys[i] = num(rows[i]!);
    return idx.sort((a, b) => (keys[a]! - keys[b]!) * dir || a - b);
  }
  const text = textKey(q.sort);
  const keys = rows.map(text);
  return idx.sort((a, b) => {
    const x = keys[a]!;
    const y = keys[b]!;
    return (x < y ? -1 : x > y ? 1 : 0) * dir || a - b;
  });
}

function rowOf(d: Deps, e: ProxyEntry): TableRow {
  const id = e.record.id;
  const f = d.series.figures(id);
  return {
    id,
    url: e.url,
    protocol: e.record.protocol,
    country: e.record.country,
    health: e.health,
    breaker: d.breakers.state(id),
    attempts: f.attempts,
    success_rate: f.success_rate === null ? null : Math.round(f.success_rate * 10_000) / 10_000,
    p50_ms: f.p50_ms,
    in_flight: e.inFlight,
  };
}

export function tablePage(d: Deps, q: TableQuery): TablePage {
  const all = d.pool.all();
  const match = matcher(d, q);
  const rows = match ? all.filter(match) : all;
  const start = (q.page - 1) * q.page_size;
  let items: TableRow[];
  if (start >= rows.length) items = [];
  else if (q.sort === 'created' && q.order === 'asc') {
    items = rows.slice(start, start + q.page_size).map((e) => rowOf(d, e));
  } else {
    const order = ordered(d, rows, q).subarray(start, start + q.page_size);
    items = Array.from(order, (i) => rowOf(d, rows[i]!));
  }
  return {
    items,
    total: rows.length,
    pool_size: all.length,
    page: q.page,
    page_size: q.page_size,
    has_next: start + q.page_size < rows.length,
  };
}
