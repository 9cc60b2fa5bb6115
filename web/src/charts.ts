/**
 * The two live charts (uPlot, canvas): requests and errors per second, and p50/p95 latency, over the last
 * 15 minutes (or a shorter window the user picks). New samples are appended as they arrive and older ones
 * dropped; the charts follow their container's width. Each figure also carries its sample count and newest time as data attributes, which
 * the browser test reads to see the chart move.
 */
import uPlot from 'uplot';
import type { Samples } from './types.ts';

const COLORS = { requests: '#1f5fbf', errors: '#c0262d', p50: '#1b7a3d', p95: '#8a5a00' };

interface Line {
  label: string;
  stroke: string;
  fill?: string;
}

function heightFor(width: number): number {
  return width < 520 ? 170 : 220;
}

/** The span shown, shared by both charts; the data always covers the server's whole window. */
interface View {
  windowS: number;
}

/** A y-axis label: milliseconds from 1,000 up as seconds, large rates as thousands. */
export function axisLabel(v: number, unit: string): string {
  const trim = (n: number) => String(Number(n.toFixed(n < 10 ? 1 : 0)));
  if (unit === ' ms') return v >= 1000 ? `${trim(v / 1000)} s` : `${trim(v)} ms`;
  return v >= 10_000 ? `${trim(v / 1000)}k${unit}` : `${trim(v)}${unit}`;
}

/** Pixels for labels of `values` (about 7 px a character at the axis font, plus the ticks' gap). */
function axisWidth(values: string[] | null): number {
  let longest = 0;
  for (const v of values ?? []) longest = Math.max(longest, v.length);
  return Math.max(40, 18 + 7 * longest);
}

function options(width: number, view: View, lines: Line[], unit: string): uPlot.Options {
  return {
    width,
    height: heightFor(width),
    cursor: { drag: { x: false, y: false, setScale: false } },
    legend: { live: true },
    scales: {
      x: {
        time: true,
        range: (_u, _min, max) => {
          const hi = Number.isFinite(max) ? max : Date.now() / 1000;
          return [hi - view.windowS, hi];
        },
      },
      y: { range: (_u, _min, max) => [0, Math.max(1, (Number.isFinite(max) ? max : 0) * 1.15)] },
    },
    axes: [
      { stroke: '#333', grid: { stroke: '#e3e3e3' } },
      {
        stroke: '#333',
        grid: { stroke: '#e3e3e3' },
        // Wide enough for the longest label drawn (none is cut: "12 s", not "000 ms").
        size: (_u, values) => axisWidth(values),
        values: (_u, ticks) => ticks.map((v) => axisLabel(v, unit)),
      },
    ],
    series: [
      {},
      ...lines.map((l) => ({ label: l.label, stroke: l.stroke, width: 2, fill: l.fill, spanGaps: false })),
    ],
  };
}

class Chart {
  readonly #plot: uPlot;
  readonly #figure: HTMLElement;

  constructor(figure: HTMLElement, view: View, lines: Line[], unit: string) {
    this.#figure = figure;
    const box = figure.querySelector<HTMLElement>('.plot');
    if (!box) throw new Error('a chart figure needs a .plot box');
    const empty: uPlot.AlignedData = [[], ...lines.map(() => [])];
    this.#plot = new uPlot(options(box.clientWidth || 300, view, lines, unit), empty, box);
    new ResizeObserver(() => {
      const w = box.clientWidth;
      if (w > 0 && w !== this.#plot.width) this.#plot.setSize({ width: w, height: heightFor(w) });
    }).observe(box);
  }

  show(t: number[], ...ys: (number | null)[][]): void {
    this.#plot.setData([t, ...ys]);
    this.#figure.dataset.samples = String(t.length);
    this.#figure.dataset.lastT = String(t.at(-1) ?? '');
  }
}

export class Charts {
  readonly #windowS: number;
  readonly #view: View;
  readonly #rate: Chart;
  readonly #latency: Chart;
  readonly #t: number[] = [];
  readonly #requests: number[] = [];
  readonly #errors: number[] = [];
  readonly #p50: (number | null)[] = [];
  readonly #p95: (number | null)[] = [];

  constructor(rate: HTMLElement, latency: HTMLElement, windowS: number) {
    this.#windowS = windowS;
    this.#view = { windowS };
    this.#rate = new Chart(
      rate,
      this.#view,
      [
        { label: 'requests/s', stroke: COLORS.requests, fill: 'rgba(31,95,191,0.08)' },
        { label: 'errors/s', stroke: COLORS.errors },
      ],
      '',
    );
    this.#latency = new Chart(
      latency,
      this.#view,
      [
        { label: 'p50', stroke: COLORS.p50 },
        { label: 'p95', stroke: COLORS.p95 },
      ],
      ' ms',
    );
  }

  /** Shows the last `seconds` (at most the server's window). */
  setWindow(seconds: number): void {
    this.#view.windowS = Math.min(Math.max(seconds, 10), this.#windowS);
    this.#draw();
  }

  /** Newest sample time (epoch s), 0 before the first: the cursor of the next `live` call. */
  get lastT(): number {
    return this.#t.at(-1) ?? 0;
  }

  append(s: Samples): void {
    for (let i = 0; i < s.t.length; i++) {
      const t = s.t[i]!;
      if (t <= this.lastT) continue;
      this.#t.push(t);
      this.#requests.push(s.requests[i]! / s.interval_s);
      this.#errors.push(s.errors[i]! / s.interval_s);
      this.#p50.push(s.p50_ms[i] ?? null);
      this.#p95.push(s.p95_ms[i] ?? null);
    }
    const cutoff = this.lastT - this.#windowS;
    let drop = 0;
    while (drop < this.#t.length && this.#t[drop]! <= cutoff) drop++;
    for (const a of [this.#t, this.#requests, this.#errors, this.#p50, this.#p95]) a.splice(0, drop);
    this.#draw();
  }

  #draw(): void {
    this.#rate.show(this.#t, this.#requests, this.#errors);
    this.#latency.show(this.#t, this.#p50, this.#p95);
  }

  /** The newest second's figures, for the summary. */
  latest(): { requests: number; errors: number } | null {
    const n = this.#t.length;
    return n === 0 ? null : { requests: this.#requests[n - 1]!, errors: this.#errors[n - 1]! };
  }
}
