/** Scaling for the admissions-per-minute chart: series of counts → SVG polyline points. */

export interface ChartBox {
  width: number;
  height: number;
  /** Room for the axis labels. */
  left: number;
  right: number;
  top: number;
  bottom: number;
}

export interface ScaledChart {
  /** The value at the top of the plot (a round number ≥ every value, at least 1). */
  max: number;
  /** Values with a grid line and a label: 0, the middle when it is whole, and max. */
  ticks: { value: number; y: number }[];
  /** One `points` attribute per series, in order. */
  points: string[];
  /** Where the plot is drawn. */
  plot: { x0: number; x1: number; y0: number; y1: number };
}

/** The smallest of 1, 2, 5 × 10ⁿ at or above `v` (1 for nothing at all). */
export function niceCeil(v: number): number {
  if (!(v > 1)) return 1;
  const pow = 10 ** Math.floor(Math.log10(v));
  const f = v / pow;
  const nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  return nice * pow;
}

const round1 = (n: number): number => Math.round(n * 10) / 10;

/**
 * Places every series in `box`: the oldest value at the left edge, the newest at the right.
 * Shorter series are aligned to the right (they end with the same, newest minute).
 */
export function scaleChart(series: readonly (readonly number[])[], box: ChartBox): ScaledChart {
  const slots = Math.max(1, ...series.map((s) => s.length));
  const peak = Math.max(0, ...series.flatMap((s) => s.map((v) => (Number.isFinite(v) ? v : 0))));
  const max = niceCeil(peak);
  const x0 = box.left;
  const x1 = box.width - box.right;
  const y0 = box.top;
  const y1 = box.height - box.bottom;
  const step = slots > 1 ? (x1 - x0) / (slots - 1) : 0;
  const xAt = (i: number): number => (slots > 1 ? x0 + i * step : (x0 + x1) / 2);
  const yAt = (v: number): number => y1 - (Math.min(Math.max(v, 0), max) / max) * (y1 - y0);
  const points = series.map((s) => {
    const offset = slots - s.length;
    return s
      .map((v, i) => `${round1(xAt(offset + i))},${round1(yAt(Number.isFinite(v) ? v : 0))}`)
      .join(" ");
  });
  const tickValues = max % 2 === 0 ? [0, max / 2, max] : [0, max];
  return {
    max,
    ticks: tickValues.map((value) => ({ value, y: round1(yAt(value)) })),
    points,
    plot: { x0, x1, y0, y1 },
  };
}

/**
 * A colour and a dash pattern per gate: the Okabe–Ito palette (told apart by colour-blind
 * eyes too) and, past it, dashes.
 */
const PALETTE = ["#56B4E9", "#E69F00", "#009E73", "#F0E442", "#CC79A7", "#D55E00", "#0072B2"];
const DASHES = ["", "10 5", "3 4", "12 4 3 4"];

export function seriesStyle(index: number): { color: string; dash: string } {
  const i = Math.max(0, Math.floor(index));
  return {
    color: PALETTE[i % PALETTE.length] ?? "#ffffff",
    dash: DASHES[Math.floor(i / PALETTE.length) % DASHES.length] ?? "",
  };
}

/** Fill of a progress bar, 0–100 (%), for `value` out of `total` (none: no bar). */
export function percentOf(value: number, total: number | null): number | null {
  if (total === null || total <= 0) return null;
  return Math.min(100, Math.max(0, (value / total) * 100));
}
