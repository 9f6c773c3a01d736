// One series over time (uPlot, canvas, like Chart.tsx): each run's estimate with its interval;
// a dashed vertical line before each regression's first bad point, labelled with its relative
// change, interval and status; the level (mean estimate) of each segment between them. A click
// on a point opens its run; the keyboard way there is the Points list under the chart
// (History.tsx), and the change points are listed as text under the canvas for screen readers.
// The options, the overlay and the picking are in lib/series-plot.ts (unit-tested).
import { useEffect, useMemo, useRef } from "preact/hooks";
import uPlot, { type AlignedData } from "uplot";
import type { Regression, Series } from "../api/gen/tlbfleet/v1/nightly";
import { navigate } from "../hooks";
import { betterArrow, regressionStatusName, seriesChartModel } from "../lib/history";
import { drawnPoints, pickPoint, seriesPlotOptions } from "../lib/series-plot";
import { runPath } from "../lib/url-state";

const WIDTH = 620;
const HEIGHT = 240;

export function SeriesChart({
  series,
  regressions,
}: {
  series: Series;
  regressions: Regression[];
}) {
  // The page polls: rebuild the chart when the points or the regressions change, not on
  // every render (History passes a fresh [] for a series with no regression).
  const regKey = regressions
    .map((r) => `${r.id}:${r.status}:${r.index}:${r.firstBadRun}`)
    .join(",");
  // regKey stands for `regressions` in the dependencies.
  const m = useMemo(() => seriesChartModel(series, regressions), [series, regKey]);
  const metric = series.key?.metric ?? "";
  const yLabel = `${metric} (${betterArrow(series.better)})`;
  const ref = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const opts = seriesPlotOptions(m, { width: WIDTH, height: HEIGHT, yLabel });
    opts.hooks!.draw!.push((u) => {
      // Where each point is drawn (CSS px in the plot area), so the browser test can click one.
      el.dataset.pointsPx = JSON.stringify(
        drawnPoints(u, m).map((p) => [Math.round(p.x), Math.round(p.y)]),
      );
    });
    const plot = new uPlot(opts, m.data as unknown as AlignedData, el);
    const at = (e: MouseEvent) => {
      const r = plot.over.getBoundingClientRect();
      return pickPoint(drawnPoints(plot, m), e.clientX - r.left, e.clientY - r.top);
    };
    const onClick = (e: MouseEvent) => {
      if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      const i = at(e);
      if (i !== undefined) navigate(runPath(m.runIds[i]!));
    };
    const onMove = (e: MouseEvent) => plot.over.classList.toggle("pointing", at(e) !== undefined);
    plot.over.addEventListener("click", onClick);
    plot.over.addEventListener("mousemove", onMove);
    return () => {
      plot.over.removeEventListener("click", onClick);
      plot.over.removeEventListener("mousemove", onMove);
      plot.destroy();
    };
  }, [m, yLabel]);

  const n = m.runIds.length;
  return (
    <figure
      class="series-chart"
      data-testid="series-chart"
      data-points={n}
      data-markers={m.markers.length}
    >
      <div
        ref={ref}
        role="img"
        aria-label={`${metric}: ${n} points, ${m.markers.length} change points`}
      />
      {m.markers.length > 0 && (
        <ul class="change-markers">
          {m.markers.map((mk) => (
            <li
              key={mk.regression.id}
              data-testid="change-marker"
              data-index={mk.index}
              data-status={regressionStatusName(mk.regression.status)}
            >
              change before point {mk.index + 1} (run {m.runIds[mk.index]}):{" "}
              <span class="marker-label">{mk.label}</span>
            </li>
          ))}
        </ul>
      )}
    </figure>
  );
}
