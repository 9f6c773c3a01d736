// The History page's data shaping: filters, regression order and placement, the chart's data
// (uPlot's aligned arrays, markers and levels in data units).
import { describe, expect, it } from "vitest";
import {
  ListRegressionsResponse,
  ListSeriesResponse,
  RegressionStatus,
  type Regression,
  type Series,
} from "../api/gen/tlbfleet/v1/nightly";
import {
  changeIndex,
  filterOptions,
  filterSeries,
  formatRelative,
  historyFilterFromQuery,
  hostClass,
  queryFromHistoryFilter,
  regressionsBySeries,
  seriesChartModel,
  sortRegressions,
  timeLabel,
  yDomain,
} from "./history";

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 1);

/** A series as the API sends it (canonical JSON), decoded by the generated code. */
function series(
  id: string,
  key: Record<string, string>,
  estimates: number[],
  times = estimates.map((_, i) => T0 + i * DAY),
): Series {
  const response = ListSeriesResponse.fromJSON({
    series: [
      {
        id,
        key: { microarch: "skylake", bootEntry: "default", benchmark: "pipetest", ...key },
        better: "BETTER_LOWER",
        points: estimates.map((e, i) => ({
          runId: `r${id}-${i}`,
          finishedUnixMs: String(times[i]),
          estimate: e,
          low: e - 1,
          high: e + 1,
          confidence: 0.95,
          arm: "a",
          samples: 3,
        })),
      },
    ],
  });
  return response.series[0]!;
}

function regression(over: Record<string, unknown>): Regression {
  return ListRegressionsResponse.fromJSON({
    regressions: [
      {
        id: "g1",
        seriesId: "1",
        status: "REGRESSION_OPEN",
        relative: { estimate: 0.1, low: 0.05, high: 0.15 },
        createdUnix: "100",
        ...over,
      },
    ],
  }).regressions[0]!;
}

describe("filters", () => {
  const all = [
    series("1", { metric: "usecs_per_op", config: "loops=1000" }, [1]),
    series("2", { metric: "ops_per_sec", config: "loops=1000" }, [1]),
    series("3", { metric: "usecs_per_op", config: "loops=2000", microarch: "zen4" }, [1]),
  ];

  it("round-trips through the URL and drops empty fields", () => {
    const f = historyFilterFromQuery(new URLSearchParams("metric=usecs_per_op&host=zen4+%2F+x"));
    expect(f).toEqual({
      benchmark: "",
      host: "zen4 / x",
      config: "",
      param: "",
      metric: "usecs_per_op",
    });
    expect(queryFromHistoryFilter(f).toString()).toBe("host=zen4+%2F+x&metric=usecs_per_op");
  });

  it("keeps the series whose every set field matches, host class = microarch / boot entry", () => {
    const f = historyFilterFromQuery(new URLSearchParams("metric=usecs_per_op"));
    expect(filterSeries(all, f).map((s) => s.id)).toEqual(["1", "3"]);
    expect(hostClass(all[2]!.key)).toBe("zen4 / default");
    const g = { ...f, host: "zen4 / default" };
    expect(filterSeries(all, g).map((s) => s.id)).toEqual(["3"]);
  });

  it("offers each filter the values of the series the other filters keep", () => {
    const f = historyFilterFromQuery(new URLSearchParams("metric=ops_per_sec"));
    const o = filterOptions(all, f);
    expect(o.config).toEqual(["loops=1000"]);
    expect(o.host).toEqual(["skylake / default"]);
    // The metric itself still offers every metric.
    expect(o.metric).toEqual(["ops_per_sec", "usecs_per_op"]);
  });
});

describe("regressions", () => {
  it("lists open first, then acknowledged, then fixed, newest first within a status", () => {
    const list = [
      regression({ id: "fixed", status: "REGRESSION_FIXED", createdUnix: "300" }),
      regression({ id: "ack", status: "REGRESSION_ACKNOWLEDGED", createdUnix: "400" }),
      regression({ id: "old-open", createdUnix: "100" }),
      regression({ id: "new-open", createdUnix: "200" }),
    ];
    expect(sortRegressions(list).map((r) => r.id)).toEqual([
      "new-open",
      "old-open",
      "ack",
      "fixed",
    ]);
    expect(regressionsBySeries(list).get("1")?.length).toBe(4);
  });

  it("places a change at its index, or finds the first bad run when the index is stale", () => {
    const s = series("1", { metric: "m" }, [10, 10, 10, 12, 12, 12]);
    expect(changeIndex(s, regression({ index: 3, firstBadRun: "r1-3" }))).toBe(3);
    expect(changeIndex(s, regression({ index: 1, firstBadRun: "r1-4" }))).toBe(4);
    // Not in this series, or at the first point (no "before"): no marker.
    expect(changeIndex(s, regression({ index: 3, firstBadRun: "elsewhere" }))).toBeUndefined();
    expect(changeIndex(s, regression({ index: 0, firstBadRun: "r1-0" }))).toBeUndefined();
  });

  it("formats the relative change with its interval, signed percentages", () => {
    expect(formatRelative({ estimate: 0.051, low: 0.032, high: 0.07 })).toBe(
      "+5.10% [+3.20%, +7.00%]",
    );
    expect(formatRelative(undefined)).toBe("—");
  });
});

describe("seriesChartModel", () => {
  it("puts each point at its finish time with its estimate and interval, in uPlot's order", () => {
    const times = [T0, T0 + DAY, T0 + 4 * DAY];
    const s = series("1", { metric: "m" }, [10, 20, 30], times);
    const m = seriesChartModel(s);
    expect(m.byTime).toBe(true);
    expect(m.data).toEqual([times, [10, 20, 30], [9, 19, 29], [11, 21, 31]]);
    expect(m.runIds).toEqual(["r1-0", "r1-1", "r1-2"]);
    // 4 % of the span either side keeps the end points off the plot's edges.
    expect(m.xRange).toEqual([T0 - 0.16 * DAY, T0 + 4.16 * DAY]);
    // Every interval is inside the y range.
    expect(m.yRange[0]).toBeLessThan(9);
    expect(m.yRange[1]).toBeGreaterThan(31);
    expect(m.markers).toEqual([]);
    expect(m.levels).toEqual([]);
    expect(m.xTicks).toEqual([
      { value: T0, label: "2026-11-01" },
      { value: T0 + DAY, label: "2026-11-02" },
      { value: T0 + 4 * DAY, label: "2026-11-05" },
    ]);
  });

  it("pinches a point with no interval (0, 0) to its estimate", () => {
    const s = series("1", { metric: "m" }, [10, 20]);
    s.points[1] = { ...s.points[1]!, low: 0, high: 0 };
    const [, est, low, high] = seriesChartModel(s).data;
    expect(est).toEqual([10, 20]);
    expect(low).toEqual([9, 20]);
    expect(high).toEqual([11, 20]);
  });

  it("labels times as precisely as the span needs", () => {
    expect(timeLabel(T0 + 3_723_000, 4 * DAY)).toBe("2026-11-01");
    expect(timeLabel(T0 + 3_723_000, DAY)).toBe("11-01 01:02");
    expect(timeLabel(T0 + 3_723_000, 60_000)).toBe("01:02:03");
  });

  it("spaces points evenly by index when their times do not increase", () => {
    const s = series("1", { metric: "m" }, [1, 2, 3], [T0, T0, T0]);
    const m = seriesChartModel(s);
    expect(m.byTime).toBe(false);
    expect(m.data[0]).toEqual([0, 1, 2]);
    expect(m.xTicks.map((t) => t.value)).toEqual([0, 1, 2]);
    const back = seriesChartModel(series("1", { metric: "m" }, [1, 2], [T0 + DAY, T0]));
    expect(back.data[0]).toEqual([0, 1]);
  });

  it("draws a marker between the last good and first bad point, with levels either side", () => {
    const times = [0, 1, 2, 5, 6, 7].map((d) => T0 + d * DAY);
    const s = series("1", { metric: "m" }, [10, 10, 10, 13, 13, 13], times);
    const r = regression({ index: 3, firstBadRun: "r1-3" });
    const m = seriesChartModel(s, [r]);
    expect(m.markers).toHaveLength(1);
    const mk = m.markers[0]!;
    expect(mk.index).toBe(3);
    // Halfway between day 2 and day 5, in time (not in index).
    expect(mk.x).toBe(T0 + 3.5 * DAY);
    expect(mk.label).toBe("+10.00% [+5.00%, +15.00%] open");
    expect(m.levels).toEqual([
      { x1: times[0], x2: mk.x, value: 10 },
      { x1: mk.x, x2: times[5], value: 13 },
    ]);
  });

  it("orders several markers and labels each with its status", () => {
    const s = series("1", { metric: "m" }, [1, 1, 1, 2, 2, 2, 3, 3, 3]);
    const m = seriesChartModel(s, [
      regression({ id: "late", index: 6, firstBadRun: "r1-6", status: "REGRESSION_FIXED" }),
      regression({ id: "early", index: 3, firstBadRun: "r1-3", status: "REGRESSION_ACKNOWLEDGED" }),
    ]);
    expect(m.markers.map((k) => k.regression.id)).toEqual(["early", "late"]);
    expect(m.markers.map((k) => k.x)).toEqual([T0 + 2.5 * DAY, T0 + 5.5 * DAY]);
    expect(m.markers.map((k) => k.label.split(" ").at(-1))).toEqual(["acknowledged", "fixed"]);
    expect(m.levels.map((l) => [l.x1, l.x2, l.value])).toEqual([
      [T0, T0 + 2.5 * DAY, 1],
      [T0 + 2.5 * DAY, T0 + 5.5 * DAY, 2],
      [T0 + 5.5 * DAY, T0 + 8 * DAY, 3],
    ]);
    expect(m.markers[0]!.regression.status).toBe(RegressionStatus.REGRESSION_ACKNOWLEDGED);
  });

  it("places a marker by its first bad run when the stored index is stale; none outside", () => {
    const s = series("1", { metric: "m" }, [1, 1, 1, 1, 2, 2], Array(6).fill(T0));
    const m = seriesChartModel(s, [
      regression({ id: "stale", index: 1, firstBadRun: "r1-4" }),
      regression({ id: "gone", index: 9, firstBadRun: "trimmed" }),
    ]);
    expect(m.markers.map((k) => [k.regression.id, k.index, k.x])).toEqual([["stale", 4, 3.5]]);
    expect(m.levels.map((l) => l.value)).toEqual([1, 2]);
  });

  it("puts a lone point in the middle and pads a flat range", () => {
    const s = series("1", { metric: "m" }, [5]);
    const m = seriesChartModel(s);
    expect(m.data[0]).toEqual([0]);
    expect(m.xRange).toEqual([-1, 1]);
    expect(yDomain([{ ...s.points[0]!, low: 5, high: 5 }])).toEqual([4.75, 5.25]);
  });
});
