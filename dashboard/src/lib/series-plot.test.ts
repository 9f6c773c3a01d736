// A History chart's uPlot side without a canvas: the options built from a model, the overlay
// drawn into a recording context (where the change line, its label and the levels land in
// pixels), and which point a click picks.
import { describe, expect, it } from "vitest";
import type uPlot from "uplot";
import { ListRegressionsResponse, ListSeriesResponse } from "../api/gen/tlbfleet/v1/nightly";
import { seriesChartModel } from "./history";
import {
  LEVEL,
  MARKER,
  MARKER_TEXT,
  POINT,
  drawOverlay,
  drawnPoints,
  pickPoint,
  seriesPlotOptions,
  type OverlayTarget,
} from "./series-plot";

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 1);

function model(estimates: number[], regressions: Record<string, unknown>[] = []) {
  const series = ListSeriesResponse.fromJSON({
    series: [
      {
        id: "1",
        key: { benchmark: "pipetest", metric: "usecs_per_op" },
        points: estimates.map((e, i) => ({
          runId: `r${i}`,
          finishedUnixMs: String(T0 + i * DAY),
          estimate: e,
          low: e - 0.5,
          high: e + 0.5,
        })),
      },
    ],
  }).series[0]!;
  const regs = ListRegressionsResponse.fromJSON({
    regressions: regressions.map((r) => ({
      seriesId: "1",
      status: "REGRESSION_OPEN",
      relative: { estimate: 0.1, low: 0.05, high: 0.15 },
      ...r,
    })),
  }).regressions;
  return seriesChartModel(series, regs);
}

/** A plot area 600×200 CSS px at (50, 10) with pxRatio 1, linear on the model's ranges. */
function fakePlot(m: ReturnType<typeof model>) {
  const bbox = { left: 50, top: 10, width: 600, height: 200 };
  const valToPos = (v: number, scale: string, canvas?: boolean) => {
    const [lo, hi] = scale === "x" ? m.xRange : m.yRange;
    const f = (v - lo) / (hi - lo);
    const off = canvas ? (scale === "x" ? bbox.left : bbox.top) : 0;
    return scale === "x" ? off + f * bbox.width : off + (1 - f) * bbox.height;
  };
  /** Every straight segment stroked, with the style it was stroked in. */
  const lines: { from: number[]; to: number[]; style: string; dashed: boolean }[] = [];
  const texts: { text: string; x: number; y: number; align: string; style: string }[] = [];
  let path: number[][][] = [];
  let at: number[] = [];
  let dash: number[] = [];
  const ctx = {
    strokeStyle: "",
    fillStyle: "",
    lineWidth: 1,
    font: "",
    textAlign: "start",
    textBaseline: "alphabetic",
    save() {},
    restore() {},
    clip() {},
    rect() {},
    beginPath() {
      path = [];
    },
    setLineDash(d: number[]) {
      dash = d;
    },
    moveTo(x: number, y: number) {
      at = [x, y];
    },
    lineTo(x: number, y: number) {
      path.push([at, [x, y]]);
      at = [x, y];
    },
    stroke() {
      for (const [from, to] of path) {
        lines.push({ from: from!, to: to!, style: this.strokeStyle, dashed: dash.length > 0 });
      }
    },
    fillText(text: string, x: number, y: number) {
      texts.push({ text, x, y, align: this.textAlign, style: this.fillStyle });
    },
  };
  const u = { ctx, bbox, valToPos } as unknown as OverlayTarget;
  return { u, lines, texts, bbox, valToPos };
}

describe("seriesPlotOptions", () => {
  it("plots the estimate with points, the interval as a band from high to low, on the model's ranges", () => {
    const m = model([10, 10, 10, 11, 11, 11], [{ index: 3, firstBadRun: "r3" }]);
    const o = seriesPlotOptions(m, { width: 620, height: 240, yLabel: "usecs_per_op (↓ better)" });
    expect(o.series.map((s) => s.label)).toEqual(["run", "estimate", "low", "high"]);
    expect(o.series[1]!.points?.show).toBe(true);
    expect(o.bands).toEqual([{ series: [3, 2], fill: `${POINT}1a` }]);
    expect(o.scales?.x?.range).toEqual(m.xRange);
    expect(o.scales?.y?.range).toEqual(m.yRange);
    expect(o.scales?.x?.time).toBe(false);
    expect(o.axes?.[1]?.label).toBe("usecs_per_op (↓ better)");
    // No drag-zoom: a click is a click on a point.
    expect(o.cursor?.drag).toEqual({ x: false, y: false });
    const u = {} as uPlot;
    const splits = o.axes![0]!.splits as (...a: unknown[]) => number[];
    const values = o.axes![0]!.values as (...a: unknown[]) => string[];
    expect(splits(u, 0, 0, 0, 0, 0)).toEqual([T0, T0 + 2 * DAY, T0 + 5 * DAY]);
    expect(values(u, [], 0, 0, 0)).toEqual(["2026-11-01", "2026-11-03", "2026-11-06"]);
    // The legend reads the hovered point's run.
    const run = o.series[0]!.value as (u: uPlot, v: number, s: number, i: number | null) => string;
    expect(run(u, T0 + DAY, 0, 1)).toBe("r1 (2026-11-02T00:00Z)");
    expect(run(u, 0, 0, null)).toBe("—");
    expect(o.hooks?.draw).toHaveLength(1);
  });
});

describe("drawOverlay", () => {
  it("draws the change line between the last good and first bad point, labelled, and a level either side", () => {
    const m = model([10, 10, 10, 11, 11, 11], [{ index: 3, firstBadRun: "r3" }]);
    const { u, lines, texts, bbox, valToPos } = fakePlot(m);
    drawOverlay(u, m);
    const xOf = (i: number) => valToPos(m.data[0][i]!, "x", true);

    const marker = lines.filter((l) => l.style === MARKER);
    expect(marker).toHaveLength(1);
    const [line] = marker;
    expect(line!.dashed).toBe(true);
    expect(line!.from[0]).toBe(line!.to[0]);
    expect(line!.from[0]).toBeGreaterThan(xOf(2));
    expect(line!.from[0]).toBeLessThan(xOf(3));
    // The plot's full height.
    expect([line!.from[1], line!.to[1]]).toEqual([bbox.top, bbox.top + bbox.height]);

    expect(texts).toHaveLength(1);
    expect(texts[0]!.text).toBe("+10.00% [+5.00%, +15.00%] open");
    expect(texts[0]!.style).toBe(MARKER_TEXT);
    expect(texts[0]!.x).toBeGreaterThan(line!.from[0]!);

    // Levels: 10 from the first point to the line, 11 from the line to the last point.
    const levels = lines.filter((l) => l.style === LEVEL);
    expect(levels.map((l) => [l.from[0], l.to[0], l.from[1], l.to[1]])).toEqual([
      [xOf(0), line!.from[0], valToPos(10, "y", true), valToPos(10, "y", true)],
      [line!.from[0], xOf(5), valToPos(11, "y", true), valToPos(11, "y", true)],
    ]);
    expect(levels.every((l) => l.dashed)).toBe(true);

    // A whisker per point from low to high (plus two caps each), solid.
    const whiskers = lines.filter((l) => l.style === POINT && l.from[0] === l.to[0]);
    expect(whiskers.map((l) => l.from[0])).toEqual([0, 1, 2, 3, 4, 5].map(xOf));
    expect(whiskers[3]!.from[1]).toBe(valToPos(10.5, "y", true));
    expect(whiskers[3]!.to[1]).toBe(valToPos(11.5, "y", true));
  });

  it("puts a label in the right third left of its line, and draws nothing for a plain series", () => {
    const m = model([1, 1, 1, 1, 1, 1, 1, 2, 2], [{ index: 7, firstBadRun: "r7" }]);
    const { u, texts, lines } = fakePlot(m);
    drawOverlay(u, m);
    expect(texts[0]!.align).toBe("right");
    expect(texts[0]!.x).toBeLessThan(lines.find((l) => l.style === MARKER)!.from[0]!);

    const plain = model([1, 2, 3]);
    const p = fakePlot(plain);
    drawOverlay(p.u, plain);
    expect(p.texts).toEqual([]);
    expect(p.lines.filter((l) => l.style !== POINT)).toEqual([]);
  });
});

describe("pickPoint", () => {
  const m = model([10, 20, 30]);
  const { valToPos } = fakePlot(m);
  const drawn = drawnPoints({ valToPos } as Pick<uPlot, "valToPos">, m);

  it("picks the point whose dot or whisker is under the click, and none on empty plot", () => {
    expect(drawn.map((p) => Math.round(p.x))).toEqual([22, 300, 578]);
    expect(pickPoint(drawn, drawn[1]!.x, drawn[1]!.y)).toBe(1);
    expect(pickPoint(drawn, drawn[2]!.x - 8, drawn[2]!.yHigh - 5)).toBe(2);
    expect(pickPoint(drawn, drawn[0]!.x + 5, drawn[0]!.yLow + 3)).toBe(0);
    // Between points, or above a point well clear of its whisker: nothing.
    expect(pickPoint(drawn, (drawn[0]!.x + drawn[1]!.x) / 2, drawn[0]!.y)).toBeUndefined();
    expect(pickPoint(drawn, drawn[0]!.x, drawn[0]!.yHigh - 40)).toBeUndefined();
  });

  it("picks the nearer of two close points", () => {
    const close = [
      { x: 100, y: 50, yLow: 55, yHigh: 45 },
      { x: 110, y: 50, yLow: 55, yHigh: 45 },
    ];
    expect(pickPoint(close, 104, 50)).toBe(0);
    expect(pickPoint(close, 106, 50)).toBe(1);
  });
});
