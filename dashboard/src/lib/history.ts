// The History page's data: series of nightly (or hand-submitted) estimates, the regressions
// found in them, filters in the URL, and the data of a series' chart (uPlot's aligned arrays,
// change-point markers, segment levels). Pure functions, so the shapes are unit-tested.
import { Better } from "../api/gen/tlbfleet/v1/common";
import {
  RegressionStatus,
  type Regression,
  type Series,
  type SeriesKey,
  type SeriesPoint,
} from "../api/gen/tlbfleet/v1/nightly";
import { formatPct } from "./format";

// --- names ---------------------------------------------------------------------------------

/** "skylake / distro-latest": the host class a series was measured on. */
export function hostClass(key: SeriesKey | undefined): string {
  const microarch = key?.microarch || "unknown microarch";
  return key?.bootEntry ? `${microarch} / ${key.bootEntry}` : microarch;
}

/** "pipetest usecs_per_op · threads=4 · loops=20000 · skylake / default". */
export function seriesTitle(key: SeriesKey | undefined): string {
  if (!key) return "(no key)";
  return [`${key.benchmark} ${key.metric}`, key.param, key.config, hostClass(key)]
    .filter((s) => s !== "")
    .join(" · ");
}

const STATUS_NAMES: Record<number, string> = {
  [RegressionStatus.REGRESSION_OPEN]: "open",
  [RegressionStatus.REGRESSION_ACKNOWLEDGED]: "acknowledged",
  [RegressionStatus.REGRESSION_FIXED]: "fixed",
};

export function regressionStatusName(status: RegressionStatus): string {
  return STATUS_NAMES[status] ?? "unknown";
}

/** Relative change as a signed percentage with its interval: "+5.10% [+3.20%, +7.00%]". */
export function formatRelative(r: { estimate: number; low: number; high: number } | undefined) {
  if (!r) return "—";
  return `${formatPct(r.estimate * 100)} [${formatPct(r.low * 100)}, ${formatPct(r.high * 100)}]`;
}

// --- filters -------------------------------------------------------------------------------

export interface HistoryFilter {
  benchmark: string;
  /** hostClass() of the series. */
  host: string;
  config: string;
  param: string;
  metric: string;
}

export const FILTER_FIELDS = ["benchmark", "host", "config", "param", "metric"] as const;
export type FilterField = (typeof FILTER_FIELDS)[number];

export function historyFilterFromQuery(q: URLSearchParams): HistoryFilter {
  return {
    benchmark: q.get("benchmark") ?? "",
    host: q.get("host") ?? "",
    config: q.get("config") ?? "",
    param: q.get("param") ?? "",
    metric: q.get("metric") ?? "",
  };
}

export function queryFromHistoryFilter(f: HistoryFilter): URLSearchParams {
  const q = new URLSearchParams();
  for (const field of FILTER_FIELDS) if (f[field]) q.set(field, f[field]);
  return q;
}

function fieldOf(key: SeriesKey | undefined, field: FilterField): string {
  if (field === "host") return hostClass(key);
  return key?.[field] ?? "";
}

export function historyHref(f: HistoryFilter): string {
  const q = queryFromHistoryFilter(f).toString();
  return `/history${q ? `?${q}` : ""}`;
}

/** The History link that shows just this series. */
export function seriesHref(key: SeriesKey | undefined): string {
  return historyHref({
    benchmark: key?.benchmark ?? "",
    host: hostClass(key),
    config: key?.config ?? "",
    param: key?.param ?? "",
    metric: key?.metric ?? "",
  });
}

/** Series whose every set filter field equals the series' value. */
export function filterSeries(series: Series[], f: HistoryFilter): Series[] {
  return series.filter((s) => FILTER_FIELDS.every((k) => !f[k] || fieldOf(s.key, k) === f[k]));
}

/**
 * The values each filter can take, from the series that match the *other* filters (so a
 * choice never leads to an empty list), sorted.
 */
export function filterOptions(series: Series[], f: HistoryFilter): Record<FilterField, string[]> {
  const out = {} as Record<FilterField, string[]>;
  for (const field of FILTER_FIELDS) {
    const values = new Set<string>();
    for (const s of filterSeries(series, { ...f, [field]: "" })) values.add(fieldOf(s.key, field));
    if (f[field]) values.add(f[field]);
    out[field] = [...values].sort();
  }
  return out;
}

/** Stable order: benchmark, metric, host class, config, param. */
export function sortSeries(series: Series[]): Series[] {
  const k = (s: Series) =>
    [s.key?.benchmark, s.key?.metric, hostClass(s.key), s.key?.config, s.key?.param].join("\u0000");
  return [...series].sort((a, b) => (k(a) < k(b) ? -1 : k(a) > k(b) ? 1 : 0));
}

// --- regressions ---------------------------------------------------------------------------

const STATUS_ORDER: Record<number, number> = {
  [RegressionStatus.REGRESSION_OPEN]: 0,
  [RegressionStatus.REGRESSION_ACKNOWLEDGED]: 1,
  [RegressionStatus.REGRESSION_FIXED]: 2,
};

/** Open first, then acknowledged, then fixed; newest first within each. */
export function sortRegressions(list: Regression[]): Regression[] {
  return [...list].sort(
    (a, b) =>
      (STATUS_ORDER[a.status] ?? 3) - (STATUS_ORDER[b.status] ?? 3) ||
      b.createdUnix - a.createdUnix ||
      (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
}

/** Regressions by series id. */
export function regressionsBySeries(list: Regression[]): Map<string, Regression[]> {
  const map = new Map<string, Regression[]>();
  for (const r of list) {
    const l = map.get(r.seriesId) ?? [];
    l.push(r);
    map.set(r.seriesId, l);
  }
  return map;
}

/**
 * Where a regression's change point sits in its series: the index of its first bad point.
 * The stored index is checked against the run ids (the series may have been trimmed or the
 * regression recorded against an older copy): when the point at `index` is not the first bad
 * run, the first bad run is looked up by id. Undefined when neither finds it, or when it is
 * the first point (there is no "before").
 */
export function changeIndex(series: Series, r: Regression): number | undefined {
  const points = series.points;
  let i: number | undefined = r.index;
  if (r.firstBadRun && points[r.index]?.runId !== r.firstBadRun) {
    const found = points.findIndex((p) => p.runId === r.firstBadRun);
    i = found >= 0 ? found : undefined;
  }
  if (i === undefined || i <= 0 || i >= points.length) return undefined;
  return i;
}

// --- chart data ----------------------------------------------------------------------------
// What SeriesChart hands uPlot (src/lib/series-plot.ts builds the options and draws the
// overlay): aligned arrays, the x ticks, the ranges, and the change markers and segment levels
// in data units, so where they stand is tested here without a canvas.

export interface ChangeMarker {
  /** x of the vertical line (data units): halfway between the last good and first bad point. */
  x: number;
  index: number;
  regression: Regression;
  label: string;
}

/** The mean level of one segment between change points, from x1 to x2 (data units). */
export interface Level {
  x1: number;
  x2: number;
  value: number;
}

export interface Tick {
  value: number;
  label: string;
}

/** uPlot's aligned data: x, estimate, interval low, interval high, one entry per point. */
export type SeriesData = [number[], number[], number[], number[]];

export interface SeriesChartModel {
  /**
   * x is the finish time (ms) when the times increase, else the point's index. A point with no
   * interval has low = high = estimate, so it draws no whisker and the band pinches to it.
   */
  data: SeriesData;
  /** Whether x is time (false: even spacing by index). */
  byTime: boolean;
  /** The run of each point, in the series' order: what a click on point i opens. */
  runIds: string[];
  markers: ChangeMarker[];
  /** Mean of the estimates of each segment between change points (plain mean). */
  levels: Level[];
  xTicks: Tick[];
  xRange: [number, number];
  yRange: [number, number];
}

/** The y range: every interval and estimate, padded 5 % (and around a flat series). */
export function yDomain(points: SeriesPoint[]): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const p of points) {
    for (const v of [p.estimate, p.low, p.high]) {
      if (!Number.isFinite(v)) continue;
      // An unset interval (0, 0) of a positive estimate is not data.
      if (v === 0 && v !== p.estimate) continue;
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
    }
  }
  if (lo === Infinity) return [0, 1];
  if (hi === lo) {
    const pad = Math.abs(lo) * 0.05 || 1;
    return [lo - pad, hi + pad];
  }
  const pad = (hi - lo) * 0.05;
  return [lo - pad, hi + pad];
}

function hasInterval(p: SeriesPoint): boolean {
  return (
    Number.isFinite(p.low) &&
    Number.isFinite(p.high) &&
    p.high >= p.low &&
    !(p.low === 0 && p.high === 0 && p.estimate !== 0)
  );
}

/** A time label as precise as the span needs: day, minute or second (UTC). */
export function timeLabel(ms: number, spanMs: number): string {
  const iso = new Date(ms).toISOString();
  if (spanMs >= 3 * 86_400_000) return iso.slice(0, 10);
  if (spanMs >= 10 * 60_000) return `${iso.slice(5, 10)} ${iso.slice(11, 16)}`;
  return iso.slice(11, 19);
}

/**
 * The chart of one series: x by finish time (points that finished at the same moment, or
 * out of order, fall back to even spacing by index so each stays visible), y linear.
 */
export function seriesChartModel(series: Series, regressions: Regression[] = []): SeriesChartModel {
  const points = series.points;
  const n = points.length;
  const times = points.map((p) => p.finishedUnixMs);
  const byTime = n >= 2 && times.every((t, i) => i === 0 || t > times[i - 1]!);
  const xs = points.map((_, i) => (byTime ? times[i]! : i));
  const mid = (i: number) => (xs[i - 1]! + xs[i]!) / 2;

  const data: SeriesData = [
    xs,
    points.map((p) => p.estimate),
    points.map((p) => (hasInterval(p) ? p.low : p.estimate)),
    points.map((p) => (hasInterval(p) ? p.high : p.estimate)),
  ];

  const markers: ChangeMarker[] = [];
  for (const r of regressions) {
    const i = changeIndex(series, r);
    if (i === undefined) continue;
    markers.push({
      x: mid(i),
      index: i,
      regression: r,
      label: `${formatRelative(r.relative)} ${regressionStatusName(r.status)}`,
    });
  }
  markers.sort((a, b) => a.index - b.index);

  // Segment levels: the plain mean of the estimates between consecutive change points.
  const cuts = [...new Set(markers.map((m) => m.index))];
  const bounds = [0, ...cuts, n];
  const levels: Level[] = [];
  if (cuts.length > 0) {
    for (let s = 0; s + 1 < bounds.length; s++) {
      const from = bounds[s]!;
      const to = bounds[s + 1]!;
      const seg = points.slice(from, to).map((p) => p.estimate);
      if (seg.length === 0) continue;
      levels.push({
        x1: from === 0 ? xs[0]! : mid(from),
        x2: to === n ? xs[n - 1]! : mid(to),
        value: seg.reduce((a, b) => a + b, 0) / seg.length,
      });
    }
  }

  const span = (times[n - 1] ?? 0) - (times[0] ?? 0);
  const xTicks: Tick[] = [];
  if (n > 0) {
    const idx = n <= 2 ? [...Array(n).keys()] : [0, Math.floor((n - 1) / 2), n - 1];
    for (const i of idx) xTicks.push({ value: xs[i]!, label: timeLabel(times[i]!, span) });
  }

  // A lone point sits in the middle; otherwise a 4 % margin keeps the end points' dots and
  // whiskers off the plot's edges.
  let xRange: [number, number] = [-1, 1];
  if (n === 1) xRange = [xs[0]! - 1, xs[0]! + 1];
  if (n >= 2) {
    const pad = (xs[n - 1]! - xs[0]!) * 0.04;
    xRange = [xs[0]! - pad, xs[n - 1]! + pad];
  }
  return {
    data,
    byTime,
    runIds: points.map((p) => p.runId),
    markers,
    levels,
    xTicks,
    xRange,
    yRange: yDomain(points),
  };
}

/** "lower is better" / "higher is better" arrows for a chart's axis label. */
export function betterArrow(better: Better): string {
  return better === Better.BETTER_LOWER ? "↓ better" : "↑ better";
}
