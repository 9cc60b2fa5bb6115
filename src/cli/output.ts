/**
 * What the CLI prints: aligned tables for people, JSON for scripts (`--json`), and a progress bar on
 * stderr only when stderr is a terminal (never in a pipe or a log). Nothing here prints a credential:
 * tables show what the server shows, and the server never shows one.
 */
import cliProgress from 'cli-progress';

export interface Out {
  /** Standard output (tables, JSON). */
  line(text?: string): void;
  /** Standard error (notes, errors). */
  note(text: string): void;
  json(value: unknown): void;
}

export const stdio: Out = {
  line: (text = '') => process.stdout.write(`${text}\n`),
  note: (text) => process.stderr.write(`${text}\n`),
  json: (value) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`),
};

/** Control characters would let a value rewrite the terminal; a cell is one line. */
function cell(v: unknown): string {
  if (v === null || v === undefined || v === '') return '-';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
  return String(v).replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
}

/** Columns padded to their widest cell; the last column is not padded. */
export function table(headers: readonly string[], rows: readonly (readonly unknown[])[]): string[] {
  const cells = rows.map((r) => r.map(cell));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const render = (r: readonly string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [render(headers), ...cells.map(render)];
}

export function printTable(
  out: Out,
  headers: readonly string[],
  rows: readonly (readonly unknown[])[],
): void {
  for (const l of table(headers, rows)) out.line(l);
}

export interface Progress {
  update(value: number): void;
  setTotal(total: number): void;
  stop(): void;
}

const NONE: Progress = { update: () => {}, setTotal: () => {}, stop: () => {} };

/** A bar on stderr when it is a terminal; otherwise nothing at all. */
export function progress(label: string, total: number, unit: string): Progress {
  if (!process.stderr.isTTY) return NONE;
  const bar = new cliProgress.SingleBar(
    {
      format: `${label} |{bar}| {percentage}% {value}/{total} ${unit}`,
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: false,
      fps: 10,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0);
  return {
    update: (value) => bar.update(value),
    setTotal: (t) => bar.setTotal(t),
    stop: () => bar.stop(),
  };
}

export function percent(part: number, whole: number): string {
  return whole === 0 ? '-' : `${Math.round((part / whole) * 1000) / 10}%`;
}
