// One metric against the sweep parameter: a line per arm with its band (uPlot, canvas).
import { useEffect, useRef } from "preact/hooks";
import uPlot, { type AlignedData, type Options } from "uplot";
import { pointCount, type MetricChart } from "../lib/chart-data";

/** Colour-blind-safe (Okabe–Ito) colours, dark enough for lines on white. */
export const ARM_COLOURS = [
  "#0072B2",
  "#D55E00",
  "#009E73",
  "#CC79A7",
  "#E69F00",
  "#56B4E9",
  "#000000",
];

export function armColour(i: number): string {
  return ARM_COLOURS[i % ARM_COLOURS.length]!;
}

function withAlpha(hex: string, alpha: string): string {
  return `${hex}${alpha}`;
}

export function MetricChartView({ chart, width = 560 }: { chart: MetricChart; width?: number }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const data: (number | null)[][] = [chart.xs];
    const series: Options["series"] = [{ label: chart.param || "sweep" }];
    const bands: NonNullable<Options["bands"]> = [];
    chart.series.forEach((s, i) => {
      const colour = armColour(i);
      const base = data.length;
      data.push(s.y, s.low, s.high);
      series.push(
        { label: s.arm, stroke: colour, width: 2, points: { show: true, size: 6 } },
        {
          label: `${s.arm} low`,
          stroke: withAlpha(colour, "55"),
          width: 1,
          points: { show: false },
        },
        {
          label: `${s.arm} high`,
          stroke: withAlpha(colour, "55"),
          width: 1,
          points: { show: false },
        },
      );
      bands.push({ series: [base + 2, base + 1], fill: withAlpha(colour, "22") });
    });
    const opts: Options = {
      width,
      height: 260,
      series,
      bands,
      // Our own legend below: uPlot's would also list each band's two edges.
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: false } },
      axes: [
        {
          label: chart.param || "",
          values: chart.numericX
            ? undefined
            : (_u, splits) => splits.map((v) => chart.xLabels[v] ?? ""),
          splits: chart.numericX ? undefined : () => chart.xs,
        },
        { label: `${chart.stat}`, size: 70 },
      ],
    };
    const plot = new uPlot(opts, data as AlignedData, el);
    return () => plot.destroy();
  }, [chart, width]);
  const points = pointCount(chart);
  return (
    <figure class="chart" data-testid={`chart-${chart.metric}`} data-points={points}>
      <figcaption>
        {chart.title}: {chart.stat} per arm against {chart.param || "(no sweep)"}; band:{" "}
        {chart.band}
      </figcaption>
      <div ref={ref} role="img" aria-label={`${chart.title}, ${points} points`} />
      <ul class="legend">
        {chart.series.map((s, i) => (
          <li key={s.arm}>
            <span class="swatch" style={{ background: armColour(i) }} aria-hidden="true" /> {s.arm}
          </li>
        ))}
      </ul>
    </figure>
  );
}
