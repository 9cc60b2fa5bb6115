import type { ForwardName } from '../lib/forward-gateways.ts';
import { type Cell, fmt, isNum } from '../lib/report.ts';
import { PROXY_CHAIN_VERSION } from './forward-text.ts';

/** Workload 8's tables: one column per proxy (direct, Rota, proxy-chain, the relay), Rota's ratios last. */
export type Outcome<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly reason: string };
export type Results<T> = ReadonlyMap<ForwardName, Outcome<T>>;

export interface FRow {
  readonly metric: string;
  readonly decimals: number;
  readonly cells: Partial<Record<ForwardName, Cell>>;
  /** Print Rota as a multiple of the others. */
  readonly ratio?: boolean;
}

const COLUMNS: ReadonlyArray<[ForwardName, string]> = [
  ['direct', 'Direct (squid)'],
  ['rota', 'Rota'],
  ['proxyChain', `proxy-chain ${PROXY_CHAIN_VERSION}`],
  ['relay', 'Reference relay'],
];

/** One figure of every subject: the number, or why there is none. */
export function cells<T>(m: Results<T>, f: (v: T) => number | null, only?: ForwardName[]) {
  const out: Partial<Record<ForwardName, Cell>> = {};
  for (const [name, o] of m) {
    if (only && !only.includes(name)) continue;
    const v = o.ok ? f(o.value) : null;
    out[name] = o.ok ? (v ?? { failed: 'n/a' }) : { failed: o.reason };
  }
  return out;
}

function showCell(c: Cell | undefined, decimals: number): string {
  if (c === undefined) return '—';
  if (isNum(c)) return fmt(c, decimals);
  return typeof c === 'number' ? 'n/a' : c.failed;
}

function ratioText(r: FRow): string {
  const rota = r.cells.rota;
  if (!r.ratio || !isNum(rota)) return '';
  const times = (x: number) => (x >= 10 ? fmt(x, 0) : x >= 1 ? fmt(x, 2) : fmt(x, 3));
  const parts: string[] = [];
  for (const [name, title] of COLUMNS) {
    const other = r.cells[name];
    if (name !== 'rota' && isNum(other) && other > 0) parts.push(`${times(rota / other)}× ${title}`);
  }
  return parts.join(', ');
}

const md = (s: string) => s.replaceAll('|', '\\|').replaceAll('\n', ' ');

export function table(rows: readonly FRow[]): string {
  const lines = [
    `| Metric | ${COLUMNS.map(([, t]) => t).join(' | ')} | Rota ratio |`,
    `|---|${COLUMNS.map(() => '---:').join('|')}|---|`,
  ];
  for (const r of rows) {
    const cols = [r.metric, ...COLUMNS.map(([n]) => showCell(r.cells[n], r.decimals)), ratioText(r)];
    lines.push(`| ${cols.map(md).join(' | ')} |`);
  }
  return lines.join('\n');
}

/** Rota's figure over another subject's, or why there is none. */
export function ratio(a: Cell | undefined, b: Cell | undefined, bName: string): Cell {
  if (!isNum(a)) return a ?? { failed: 'no figure' };
  if (!isNum(b)) return b ?? { failed: `no ${bName} figure` };
  return b > 0 ? a / b : { failed: `${bName} completed nothing` };
}

/** "the forward relay: 1.21×": a reference's own figure for a target, measured in the same run. */
export function reference(name: string, value: Cell | undefined, show: (v: number) => string): string | null {
  return isNum(value) ? `${name}: ${show(value)}` : null;
}

/** The references' figures for a target, joined; null when none was measured. */
export function references(parts: ReadonlyArray<string | null>): string | null {
  const got = parts.filter((p): p is string => p !== null);
  return got.length > 0 ? got.join('; ') : null;
}

/** "CPU per tunnel Rota 289, relay 211, proxy-chain 340 µs", or null. */
export function cpuText(what: string, c: Partial<Record<ForwardName, Cell>>): string | null {
  const names: Array<[ForwardName, string]> = [
    ['rota', 'Rota'],
    ['relay', 'relay'],
    ['proxyChain', 'proxy-chain'],
  ];
  const got = names.flatMap(([k, label]) => {
    const v = c[k];
    return isNum(v) ? [`${label} ${fmt(v, 0)}`] : [];
  });
  return got.length === names.length ? `CPU per ${what} ${got.join(', ')} µs` : null;
}
