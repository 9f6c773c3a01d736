// A run's report as chart series: for each metric, the headline statistic of each arm (the row
// the report marks Report.Stat.headline: Hmean or Amean) against the sweep parameter, with a
// band around it (the arm's Min..Max, Report.Record). Plain arrays, as uPlot takes them.
import type { Report, Report_Group, Report_Stat } from "../api/gen/tlbfleet/v1/common";
import { metricTitle } from "./table";

export interface ArmSeries {
  arm: string;
  y: (number | null)[];
  low: (number | null)[];
  high: (number | null)[];
}

export interface MetricChart {
  metric: string;
  title: string;
  /** The swept parameter's name ("" without a sweep). */
  param: string;
  /** x positions: the sweep values when all are numbers, else 0, 1, 2, ... */
  xs: number[];
  /** Tick labels for categorical x (sweep values that are not all numbers). */
  xLabels: string[];
  numericX: boolean;
  stat: string;
  /** What the band shows, for the legend. */
  band: string;
  series: ArmSeries[];
}

/** A band around an arm's value in one row: [low, high], or undefined. */
export type BandOf = (group: Report_Group, arm: number) => [number, number] | undefined;

function statValue(stat: Report_Stat | undefined, arm: number): number | null {
  if (!stat) return null;
  const defined = stat.defined[arm] ?? true;
  const v = stat.values[arm];
  return defined && v !== undefined && Number.isFinite(v) ? v : null;
}

/** The row the report marks as the headline (Hmean or Amean, as the metric is summarised). */
function headlineOf(group: Report_Group): Report_Stat | undefined {
  return group.stats.find((s) => s.headline);
}

function finite(v: number | undefined): number | null {
  return v !== undefined && Number.isFinite(v) ? v : null;
}

/** The spread of the samples (Min..Max of the arm's record), the band every report has. */
export const minMaxBand: BandOf = (group, arm) => {
  const record = group.records[arm];
  const lo = finite(record?.min);
  const hi = finite(record?.max);
  return lo === null || hi === null ? undefined : [lo, hi];
};

export function chartsFromReport(
  report: Report,
  bandOf: BandOf = minMaxBand,
  bandName = "min–max of the samples",
): MetricChart[] {
  const byMetric = new Map<string, Report_Group[]>();
  for (const g of report.groups) {
    const list = byMetric.get(g.metric) ?? [];
    list.push(g);
    byMetric.set(g.metric, list);
  }
  const charts: MetricChart[] = [];
  for (const [metric, groups] of byMetric) {
    const first = groups[0]!;
    const stat = headlineOf(first)?.name ?? "";
    const labels = groups.map((g) => g.paramValue);
    const numericX = labels.every((v) => v !== "" && Number.isFinite(Number(v)));
    const order = groups.map((_, i) => i);
    if (numericX) order.sort((a, b) => Number(labels[a]) - Number(labels[b]));
    const sorted = order.map((i) => groups[i]!);
    charts.push({
      metric,
      title: metricTitle(metric, first.unit, first.better),
      param: first.paramName,
      xs: numericX ? sorted.map((g) => Number(g.paramValue)) : sorted.map((_, i) => i),
      xLabels: sorted.map((g) => g.paramValue || "(no sweep)"),
      numericX,
      stat,
      band: bandName,
      series: report.arms.map((arm, a) => ({
        arm,
        y: sorted.map((g) => statValue(headlineOf(g), a)),
        low: sorted.map((g) => bandOf(g, a)?.[0] ?? null),
        high: sorted.map((g) => bandOf(g, a)?.[1] ?? null),
      })),
    });
  }
  return charts;
}

/** How many points a chart draws (non-null y values): what the browser test checks. */
export function pointCount(chart: MetricChart): number {
  return chart.series.reduce((n, s) => n + s.y.filter((v) => v !== null).length, 0);
}
