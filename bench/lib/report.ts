import type { Target } from './fixtures.ts';
import type { Squid } from './squid.ts';

/** What every scenario gets from run.ts: the shared fixtures and the run's durations. */
export interface Ctx {
  readonly workDir: string;
  readonly target: Target;
  readonly squid: Squid;
  /** Length of each measured load (20 s by default, `--duration=N`). */
  readonly loadS: number;
  /** Wait for a quiet machine, measure a disturbed run again (each scenario; not with loads under 10 s). */
  readonly patient: boolean;
  /** Unmeasured run before each measured one, the same for every subject (JIT, connection pools). */
  readonly warmS: number;
  /** Proxies in the SQLite file of the start-up scenario (100,000; `--proxies=N`). */
  readonly poolSize: number;
  /** Extra Node flags for every Rota (`--profile` adds --cpu-prof). */
  readonly rotaFlags: readonly string[];
  /** Why proxywhirl cannot run, or null. */
  readonly proxywhirlError: string | null;
  log(message: string): void;
}

/**
 * One line of the results: Rota's figure, the reference it is compared with (measured in the same run),
 * their ratio, and the target that ratio (or, where there is no reference, the figure itself) must meet.
 */
export interface Row {
  readonly scenario: string;
  readonly metric: string;
  readonly rota: number | null;
  readonly reference: string | null;
  readonly referenceValue: number | null;
  readonly ratio: number | null;
  readonly target: string | null;
  readonly met: boolean | null;
}

export interface ScenarioResult {
  readonly rows: Row[];
  /** Every figure measured, for bench/results/latest.json. */
  readonly raw: unknown;
}

export type Scenario = (ctx: Ctx) => Promise<ScenarioResult>;

export type Bound = { readonly min?: number; readonly max?: number };

function verdict(v: number | null, b: Bound | undefined): { target: string | null; met: boolean | null } {
  if (!b) return { target: null, met: null };
  const target = b.min !== undefined ? `≥ ${b.min}` : `≤ ${b.max}`;
  if (v === null || !Number.isFinite(v)) return { target, met: false };
  return { target, met: (b.min === undefined || v >= b.min) && (b.max === undefined || v <= b.max) };
}

/** Rota against a reference: the ratio rota / reference is what the target bounds. */
export function versus(
  scenario: string,
  metric: string,
  rota: number | null,
  reference: string,
  referenceValue: number | null,
  bound?: Bound,
): Row {
  const ratio = rota === null || !referenceValue ? null : rota / referenceValue;
  const { target, met } = verdict(ratio, bound);
  return { scenario, metric, rota, reference, referenceValue, ratio, target: target && `${target}×`, met };
}

/** A figure of Rota's alone (start-up time, success rate), bounded by an absolute target or none. */
export function alone(scenario: string, metric: string, rota: number | null, bound?: Bound): Row {
  const v = verdict(rota, bound);
  return { scenario, metric, rota, reference: null, referenceValue: null, ratio: null, ...v };
}

function num(v: number | null): string {
  if (v === null || !Number.isFinite(v)) return '—';
  const a = Math.abs(v);
  const digits = Number.isInteger(v) || a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
  return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** The results as one Markdown table (what BENCHMARKS.md's table is copied from). */
export function renderTable(rows: readonly Row[]): string {
  const head =
    '| Scenario | Metric | Rota | Reference | Ratio | Target | Met |\n|---|---|---:|---|---:|---|---|';
  const lines = rows.map((r) => {
    const ref = r.reference === null ? '—' : `${r.reference} ${num(r.referenceValue)}`;
    const ratio = r.ratio === null ? '—' : `${num(r.ratio)}×`;
    const met = r.met === null ? '' : r.met ? 'met' : '**missed**';
    return `| ${r.scenario} | ${r.metric} | ${num(r.rota)} | ${ref} | ${ratio} | ${r.target ?? ''} | ${met} |`;
  });
  return [head, ...lines].join('\n');
}
