import { type Cell, fmt, isNum, type TargetCheck, targetsTable } from './report.ts';

/** Markdown helpers for the sections of workloads 9-11 (their own tables, after the main targets). */

const md = (s: string) => s.replaceAll('|', '\\|').replaceAll('\n', ' ');

/** A figure as text: the number with `decimals`, or why there is none. */
export function show(c: Cell | undefined, decimals: number): string {
  if (c === undefined) return '—';
  if (isNum(c)) return fmt(c, decimals);
  return typeof c === 'number' ? 'n/a' : `failed: ${c.failed}`;
}

/** A table whose first column is text and every other column right-aligned. */
export function mdTable(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const lines = [
    `| ${head.map(md).join(' | ')} |`,
    `|---|${head
      .slice(1)
      .map(() => '---:')
      .join('|')}|`,
  ];
  for (const r of rows) lines.push(`| ${r.map(md).join(' | ')} |`);
  return lines.join('\n');
}

export interface Figure {
  readonly metric: string;
  readonly value: Cell;
  readonly decimals: number;
}

/** A two-column table: metric, figure. */
export function figureTable(figures: readonly Figure[], column = 'Rota'): string {
  return mdTable(
    ['Metric', column],
    figures.map((f) => [f.metric, show(f.value, f.decimals)]),
  );
}

/** `## title`, the set-up text, then each table under its own heading, then the targets. */
export function section(
  title: string,
  intro: readonly string[],
  blocks: readonly { readonly title: string; readonly table: string; readonly after?: readonly string[] }[],
  targets: readonly TargetCheck[],
): string {
  return [
    `## ${title}`,
    '',
    ...intro,
    '',
    ...blocks.flatMap((b) => [`### ${b.title}`, '', b.table, '', ...(b.after ? [...b.after, ''] : [])]),
    '### Targets',
    '',
    targetsTable(targets),
    '',
  ].join('\n');
}

/** The difference of two figures, or the first failure. */
export function minus(a: Cell, b: Cell): Cell {
  if (!isNum(a)) return a;
  if (!isNum(b)) return b;
  return a - b;
}

/** a / b, or why not. */
export function over(a: Cell, b: Cell): Cell {
  if (!isNum(a)) return a;
  if (!isNum(b)) return b;
  return b === 0 ? { failed: 'division by zero' } : a / b;
}
