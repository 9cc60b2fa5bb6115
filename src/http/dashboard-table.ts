/**
 * The dashboard's pool table, paged, sorted and filtered on the server so that a page of 100,000 proxies
 * stays a few kilobytes: one pass over the pool to filter, one sort of indices over typed keys (no row
 * object is built for a proxy that is not on the page), and only the page's rows rendered.
 */
import { BREAKER_STATES, type BreakerStateName } from '../breaker/types.ts';
import { safeLabel } from '../pool/label.ts';
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
  label: string | null;
  protocol: Protocol;
  country: string | null;
  health: Health;
  breaker: BreakerStateName;
  requests: number;
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
      e.record.country?.toLowerCase() === needle);
}

/**
 * As GET proxies counts (pool/health.ts): successful / (successful + failed), where only a proxy fault is
 * a failure; cluster-wide with shared state. Null before the first attempt or health check.
 */
function successRate(e: ProxyEntry): number | null {
  const s = e.cluster ?? e.stats;
  const n = s.success + s.failed;
  return n === 0 ? null : s.success / n;
}

/** A numeric key per entry, or null for the keys compared as text. */
function numericKey(d: Deps, sort: SortKey): ((e: ProxyEntry) => number) | null {
  switch (sort) {
    case 'health':
      return (e) => HEALTH_RANK.get(e.health) ?? 0;
    case 'breaker':
      return (e) => BREAKER_RANK.get(d.breakers.state(e.record.id)) ?? 0;
    case 'success_rate':
      return (e) => successRate(e) ?? -1;
    case 'p50_ms':
      return (e) => d.series.p50(e.record.id) ?? -1;
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

/** A total order over positions in `rows`: the key in the requested direction, then creation order. */
function comparator(d: Deps, rows: readonly ProxyEntry[], q: TableQuery): (a: number, b: number) => number {
  const dir = q.order === 'desc' ? -1 : 1;
  const num = numericKey(d, q.sort);
  if (num) {
    const keys = new Float64Array(rows.length);
    for (let i = 0; i < rows.length; i++) keys[i] = num(rows[i]!);
    return (a, b) => (keys[a]! - keys[b]!) * dir || a - b;
  }
  const keys = rows.map(textKey(q.sort));
  return (a, b) => {
    const x = keys[a]!;
    const y = keys[b]!;
    return (x < y ? -1 : x > y ? 1 : 0) * dir || a - b;
  };
}

/**
 * The first `k` positions of `0..n-1` in `cmp` order. A page near the top (the usual case) keeps only
 * the best `k` in a max-heap, O(n log k), instead of sorting all n.
 */
export function firstK(n: number, k: number, cmp: (a: number, b: number) => number): number[] {
  if (k * 8 >= n) {
    const all = new Uint32Array(n);
    for (let i = 0; i < n; i++) all[i] = i;
    return Array.from(all.sort(cmp).subarray(0, k));
  }
  const heap: number[] = [];
  const down = (from: number) => {
    let i = from;
    for (;;) {
      const l = 2 * i + 1;
      let worst = i;
      if (l < heap.length && cmp(heap[l]!, heap[worst]!) > 0) worst = l;
      if (l + 1 < heap.length && cmp(heap[l + 1]!, heap[worst]!) > 0) worst = l + 1;
      if (worst === i) return;
      [heap[i], heap[worst]] = [heap[worst]!, heap[i]!];
      i = worst;
    }
  };
  for (let i = 0; i < n; i++) {
    if (heap.length < k) {
      heap.push(i);
      for (let c = heap.length - 1; c > 0 && cmp(heap[c]!, heap[(c - 1) >> 1]!) > 0; c = (c - 1) >> 1) {
        [heap[c], heap[(c - 1) >> 1]] = [heap[(c - 1) >> 1]!, heap[c]!];
      }
    } else if (cmp(i, heap[0]!) < 0) {
      heap[0] = i;
      down(0);
    }
  }
  return heap.sort(cmp);
}

/** Positions (into `rows`) of the page's rows, in order. */
function pagePositions(d: Deps, rows: readonly ProxyEntry[], q: TableQuery, start: number): number[] {
  const end = Math.min(rows.length, start + q.page_size);
  const out: number[] = [];
  if (q.sort === 'created') {
    for (let i = start; i < end; i++) out.push(q.order === 'asc' ? i : rows.length - 1 - i);
    return out;
  }
  return firstK(rows.length, end, comparator(d, rows, q)).slice(start);
}

function rowOf(d: Deps, e: ProxyEntry): TableRow {
  const id = e.record.id;
  const s = e.cluster ?? e.stats;
  const rate = successRate(e);
  return {
    id,
    url: e.url,
    label: safeLabel(e.record),
    protocol: e.record.protocol,
    country: e.country,
    health: e.health,
    breaker: d.breakers.state(id),
    requests: s.total,
    success_rate: rate === null ? null : Math.round(rate * 10_000) / 10_000,
    p50_ms: d.series.p50(id),
    in_flight: e.inFlight,
  };
}

export function tablePage(d: Deps, q: TableQuery): TablePage {
  const all = d.pool.all();
  const match = matcher(d, q);
  const rows = match ? all.filter(match) : all;
  const start = (q.page - 1) * q.page_size;
  const items = start >= rows.length ? [] : pagePositions(d, rows, q, start).map((i) => rowOf(d, rows[i]!));
  return {
    items,
    total: rows.length,
    pool_size: all.length,
    page: q.page,
    page_size: q.page_size,
    has_next: start + q.page_size < rows.length,
  };
}
