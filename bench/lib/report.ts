/** A measured number, or why there is none (a reference that could not run, a failed step). */
export type Cell = number | { readonly failed: string };

export interface Row {
  readonly workload: string;
  readonly metric: string;
  readonly decimals: number;
  readonly direct?: Cell;
  readonly proxywhirl?: Cell;
  readonly rota?: Cell;
  /** Print Rota as a multiple of the other columns (throughput, latency, RSS), or not. */
  readonly ratio?: boolean;
}

export type Verdict = 'met' | 'missed' | 'not measured';

export interface TargetCheck {
  readonly target: string;
  readonly figure: string;
  readonly verdict: Verdict;
}

export interface WorkloadOutput {
  readonly rows: Row[];
  readonly targets: TargetCheck[];
  readonly notes: string[];
  /** Markdown sections of their own (after the targets), for workloads with other subjects than the table's. */
  readonly sections?: string[];
}

export function emptyOutput(): WorkloadOutput {
  return { rows: [], targets: [], notes: [] };
}

/** The middle value (the upper one of the two middles for an even count); NaN for none. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

export function isNum(c: Cell | undefined): c is number {
  return typeof c === 'number' && Number.isFinite(c);
}

export function fmt(n: number, decimals: number): string {
  return n.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

function cell(c: Cell | undefined, decimals: number): string {
  if (c === undefined) return '—';
  if (isNum(c)) return fmt(c, decimals);
  if (typeof c === 'number') return 'n/a';
  return `failed: ${c.failed}`;
}

function ratio(r: Row): string {
  if (!r.ratio || !isNum(r.rota)) return '';
  const parts: string[] = [];
  const times = (x: number) => (x >= 10 ? fmt(x, 0) : x >= 1 ? fmt(x, 2) : fmt(x, 3));
  if (isNum(r.direct) && r.direct > 0) parts.push(`${times(r.rota / r.direct)}× direct`);
  if (isNum(r.proxywhirl) && r.proxywhirl > 0) parts.push(`${times(r.rota / r.proxywhirl)}× proxywhirl`);
  return parts.join(', ');
}

function mdCell(s: string): string {
  return s.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

export function resultsTable(rows: readonly Row[]): string {
  const lines = [
    '| Workload | Metric | Direct (squid) | proxywhirl 0.3.3 | Rota | Rota ratio |',
    '|---|---|---:|---:|---:|---|',
  ];
  for (const r of rows) {
    const cols = [r.workload, r.metric, cell(r.direct, r.decimals), cell(r.proxywhirl, r.decimals)];
    cols.push(cell(r.rota, r.decimals), ratio(r));
    lines.push(`| ${cols.map(mdCell).join(' | ')} |`);
  }
  return lines.join('\n');
}

export function targetsTable(targets: readonly TargetCheck[]): string {
  const mark: Record<Verdict, string> = { met: 'met', missed: '**missed**', 'not measured': 'not measured' };
  const lines = ['| Target | Measured | Verdict |', '|---|---|---|'];
  for (const t of targets) lines.push(`| ${mdCell(t.target)} | ${mdCell(t.figure)} | ${mark[t.verdict]} |`);
  return lines.join('\n');
}

/** A target that compares one figure with a bound; a missing figure is "not measured", never "met". */
export function check(
  target: string,
  value: Cell | undefined,
  pass: (v: number) => boolean,
  show: (v: number) => string,
): TargetCheck {
  if (!isNum(value)) {
    const why = value === undefined ? 'no figure' : typeof value === 'number' ? 'n/a' : value.failed;
    return { target, figure: why, verdict: 'not measured' };
  }
  return { target, figure: show(value), verdict: pass(value) ? 'met' : 'missed' };
}

/**
 * The same check with what else was measured in the same run written beside its figure (a reference
 * under the same load: the floor a missed target is read against). Nothing added to an unmeasured one.
 */
export function withContext(t: TargetCheck, context: string | null): TargetCheck {
  if (context === null || t.verdict === 'not measured') return t;
  return { ...t, figure: `${t.figure} (${context})` };
}

export function failedCell(e: unknown): { failed: string } {
  const msg = e instanceof Error ? e.message : String(e);
  return { failed: msg.split('\n')[0]!.slice(0, 120) };
}
