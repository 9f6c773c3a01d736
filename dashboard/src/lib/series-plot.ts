// uPlot's side of a History series chart: the options for a SeriesChartModel (a dotted line
// through the estimates, the interval as a band and as a whisker per point), the overlay drawn
// in uPlot's draw hook (segment levels, change-point lines and their labels), and which point
// a click at a pixel picks. Kept apart from the component so the options, the overlay and the
// picking are tested without a canvas (happy-dom has none).
import type uPlot from "uplot";
import type { Options } from "uplot";
import { formatValue } from "./format";
import type { SeriesChartModel } from "./history";

/** Okabe–Ito, as Chart.tsx: estimates blue, change points vermillion, levels green. */
export const POINT = "#0072B2";
export const MARKER = "#D55E00";
/** The marker's label: a darker vermillion, readable on white (contrast > 4.5). */
export const MARKER_TEXT = "#a33f00";
export const LEVEL = "#009E73";

/** How far (CSS px) from a point's dot or whisker a click still picks it. */
export const PICK_SLOP = 12;

/** What the overlay needs of a uPlot instance (a fake one in tests). */
export type OverlayTarget = Pick<uPlot, "ctx" | "bbox" | "valToPos">;

export interface SeriesPlotConfig {
  width: number;
  height: number;
  /** The y axis' label, e.g. "usecs_per_op (↓ better)". */
  yLabel: string;
  /** Canvas pixels per CSS pixel (uPlot.pxRatio), for line widths and the label font. */
  pxRatio?: number;
}

export function seriesPlotOptions(m: SeriesChartModel, c: SeriesPlotConfig): Options {
  const pr = c.pxRatio ?? 1;
  const valueOf = (_u: uPlot, v: number | null) => (v === null ? "—" : formatValue(v));
  return {
    width: c.width,
    height: c.height,
    series: [
      {
        label: "run",
        // The legend's reading of the hovered point: its run and when it finished.
        value: (_u, _v, _s, idx) => {
          if (idx === null || m.runIds[idx] === undefined) return "—";
          const tick = m.byTime
            ? ` (${new Date(m.data[0][idx]!).toISOString().slice(0, 16)}Z)`
            : "";
          return `${m.runIds[idx]}${tick}`;
        },
      },
      {
        label: "estimate",
        stroke: `${POINT}80`,
        width: 1.5,
        points: { show: true, size: 8, stroke: POINT, fill: POINT },
        value: valueOf,
      },
      { label: "low", stroke: `${POINT}33`, width: 1, points: { show: false }, value: valueOf },
      { label: "high", stroke: `${POINT}33`, width: 1, points: { show: false }, value: valueOf },
    ],
    // The interval as a band from high (3) down to low (2).
    bands: [{ series: [3, 2], fill: `${POINT}1a` }],
    legend: { show: true, live: true },
    cursor: { drag: { x: false, y: false }, points: { size: 10 } },
    scales: {
      x: { time: false, range: m.xRange },
      y: { range: m.yRange },
    },
    axes: [
      {
        splits: () => m.xTicks.map((t) => t.value),
        values: () => m.xTicks.map((t) => t.label),
      },
      { label: c.yLabel, size: 70 },
    ],
    hooks: { draw: [(u) => drawOverlay(u, m, pr)] },
  };
}

/**
 * Over the drawn series: a whisker per point with an interval, the level of each segment
 * (dashed green), and each change point's line (dashed vermillion, the plot's full height)
 * with its label right of it, or left of it in the plot's right third; labels alternate
 * between two rows so neighbours do not overlap. Canvas pixels throughout.
 */
export function drawOverlay(u: OverlayTarget, m: SeriesChartModel, pr = 1): void {
  const { ctx } = u;
  const { left, top, width, height } = u.bbox;
  const X = (v: number) => u.valToPos(v, "x", true);
  const Y = (v: number) => u.valToPos(v, "y", true);
  const [xs, , lows, highs] = m.data;
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top, width, height);
  ctx.clip();

  ctx.strokeStyle = POINT;
  ctx.lineWidth = 2 * pr;
  ctx.setLineDash([]);
  ctx.beginPath();
  const cap = 3 * pr;
  xs.forEach((xv, i) => {
    const lo = lows[i]!;
    const hi = highs[i]!;
    if (lo === hi) return;
    const x = X(xv);
    for (const y of [Y(lo), Y(hi)]) {
      ctx.moveTo(x - cap, y);
      ctx.lineTo(x + cap, y);
    }
    ctx.moveTo(x, Y(lo));
    ctx.lineTo(x, Y(hi));
  });
  ctx.stroke();

  ctx.strokeStyle = LEVEL;
  ctx.lineWidth = 2 * pr;
  ctx.setLineDash([6 * pr, 3 * pr]);
  ctx.beginPath();
  for (const l of m.levels) {
    const y = Y(l.value);
    ctx.moveTo(X(l.x1), y);
    ctx.lineTo(X(l.x2), y);
  }
  ctx.stroke();

  ctx.strokeStyle = MARKER;
  ctx.setLineDash([4 * pr, 3 * pr]);
  ctx.beginPath();
  for (const mk of m.markers) {
    const x = X(mk.x);
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + height);
  }
  ctx.stroke();

  ctx.fillStyle = MARKER_TEXT;
  ctx.font = `600 ${11 * pr}px sans-serif`;
  ctx.textBaseline = "top";
  m.markers.forEach((mk, k) => {
    const x = X(mk.x);
    const leftOfLine = x > left + width * 0.66;
    ctx.textAlign = leftOfLine ? "right" : "left";
    ctx.fillText(mk.label, leftOfLine ? x - 4 * pr : x + 4 * pr, top + (4 + (k % 2) * 14) * pr);
  });
  ctx.restore();
}

/** A point as drawn, in CSS pixels of the plot area: its dot and its whisker's ends. */
export interface DrawnPoint {
  x: number;
  y: number;
  yLow: number;
  yHigh: number;
}

export function drawnPoints(u: Pick<uPlot, "valToPos">, m: SeriesChartModel): DrawnPoint[] {
  const [xs, estimates, lows, highs] = m.data;
  return xs.map((xv, i) => ({
    x: u.valToPos(xv, "x"),
    y: u.valToPos(estimates[i]!, "y"),
    yLow: u.valToPos(lows[i]!, "y"),
    yHigh: u.valToPos(highs[i]!, "y"),
  }));
}

/**
 * The point a click at (x, y) picks: the nearest in x among those whose dot or whisker is
 * within `slop` pixels of it; undefined when none is (a click on empty plot opens nothing).
 */
export function pickPoint(
  points: DrawnPoint[],
  x: number,
  y: number,
  slop = PICK_SLOP,
): number | undefined {
  let best: number | undefined;
  let bestDx = Infinity;
  points.forEach((p, i) => {
    const dx = Math.abs(p.x - x);
    const top = Math.min(p.y, p.yLow, p.yHigh) - slop;
    const bottom = Math.max(p.y, p.yLow, p.yHigh) + slop;
    if (dx <= slop && y >= top && y <= bottom && dx < bestDx) {
      best = i;
      bestDx = dx;
    }
  });
  return best;
}
