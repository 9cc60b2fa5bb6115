/** Helpers for the metrics tests: read Prometheus text back and run the real parser (promtool). */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export interface ParsedSample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function unescapeLabel(v: string): string {
  return v.replace(/\\(.)/g, (_m, c: string) => (c === 'n' ? '\n' : c));
}

function parseValue(v: string): number {
  if (v === '+Inf') return Number.POSITIVE_INFINITY;
  if (v === '-Inf') return Number.NEGATIVE_INFINITY;
  return Number(v);
}

export function parseSamples(text: string): ParsedSample[] {
  const out: ParsedSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`unparsable sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = unescapeLabel(l[2]!);
    out.push({ name: m[1]!, labels, value: parseValue(m[3]!) });
  }
  return out;
}

/** Sum of the samples of `name` whose labels include every pair of `match`. */
export function sumOf(
  samples: readonly ParsedSample[],
  name: string,
  match: Record<string, string> = {},
): number {
  let sum = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (Object.entries(match).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}

export function seriesOf(samples: readonly ParsedSample[], name: string): ParsedSample[] {
  return samples.filter((s) => s.name === name);
}

export interface PromtoolResult {
  readonly status: number | null;
  readonly output: string;
  /** Lint findings: `metric_name message`, one per line. */
  readonly problems: string[];
}

function promtoolPath(): string {
  for (const p of ['/usr/bin/promtool', '/usr/local/bin/promtool']) if (existsSync(p)) return p;
  const which = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' });
  const found = which.stdout.trim();
  if (which.status === 0 && found) return found;
  throw new Error(
    'promtool not found: it is the real Prometheus text parser these tests need. Install the Debian ' +
      'package `prometheus` (run `bash scripts/system-deps.sh` as root).',
  );
}

/** `promtool check metrics` with the text on stdin: exit 0 clean, 3 lint findings, 1 unparsable. */
export function promtoolCheck(text: string): PromtoolResult {
  const r = spawnSync(promtoolPath(), ['check', 'metrics'], {
    input: text,
    encoding: 'utf8',
    timeout: 20_000,
  });
  if (r.error) throw r.error;
  const output = `${r.stdout}${r.stderr}`;
  const problems = output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return { status: r.status, output, problems };
}

/**
 * The one lint finding promtool reports on /metrics that we cannot fix: `rota_proxies_total` is a gauge
 * whose name ends in _total, a name the REST interface fixes. Anything else is a real problem
 * (prom-client's three `*_total` gauges are renamed: src/metrics/process-gauges.ts).
 */
export const ACCEPTED_LINT: ReadonlySet<string> = new Set([
  'rota_proxies_total non-counter metrics should not have "_total" suffix',
]);

/**
 * promtool parses the text (exit 0, or 3 for lint findings) and finds nothing beyond ACCEPTED_LINT.
 * Returns the output for further checks.
 */
export function assertPromtoolAccepts(text: string, what: string): PromtoolResult {
  const r = promtoolCheck(text);
  if (r.status !== 0 && r.status !== 3) throw new Error(`promtool could not parse ${what}:\n${r.output}`);
  const unexpected = r.problems.filter((p) => !ACCEPTED_LINT.has(p));
  if (unexpected.length > 0) throw new Error(`promtool findings in ${what}:\n${unexpected.join('\n')}`);
  return r;
}
