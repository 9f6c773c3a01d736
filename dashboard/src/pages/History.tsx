// History: the series of estimates that finished runs add to (one point per run, nightly
// schedules add one per night), each charted over time with its change points, and the
// regressions found in them, open first; operators acknowledge them or mark them fixed.
// Filters (benchmark, host class, config, param, metric) are in the URL.
import { api } from "../api";
import type { Regression, Series } from "../api/gen/tlbfleet/v1/nightly";
import { ErrorView, Loading } from "../components/common";
import { Link } from "../components/Link";
import { RegressionsTable } from "../components/RegressionsTable";
import { SchedulesTable } from "../components/SchedulesTable";
import { SeriesChart } from "../components/SeriesChart";
import { setQuery, useResource, useSession, useTitle, type Location } from "../hooks";
import { betterName, formatUnixTime, formatValue } from "../lib/format";
import {
  FILTER_FIELDS,
  filterOptions,
  filterSeries,
  historyFilterFromQuery,
  hostClass,
  queryFromHistoryFilter,
  regressionsBySeries,
  seriesTitle,
  sortRegressions,
  sortSeries,
  type FilterField,
} from "../lib/history";
import { runPath } from "../lib/url-state";

/** Charts drawn at once; a narrower filter shows the rest. */
const MAX_CHARTS = 40;

const FILTER_LABELS: Record<FilterField, string> = {
  benchmark: "Benchmark",
  host: "Host class",
  config: "Config",
  param: "Param",
  metric: "Metric",
};

export function HistoryPage({ location }: { location: Location }) {
  useTitle("History");
  const filter = historyFilterFromQuery(location.query);
  const session = useSession();
  // Every series without points: what the filters can offer. The points only for the
  // benchmark and metric chosen (the server filters those exactly), the rest filtered here.
  const keys = useResource("series-keys", (signal) => api.listSeries({}, signal), {
    pollMs: 30_000,
  });
  const withPoints = useResource(
    `series?${filter.benchmark}\u0000${filter.metric}`,
    (signal) =>
      api.listSeries(
        { benchmark: filter.benchmark, metric: filter.metric, withPoints: true },
        signal,
      ),
    { pollMs: 30_000 },
  );
  const regressions = useResource("regressions", (signal) => api.listRegressions([], signal), {
    pollMs: 30_000,
  });
  const schedules = useResource("schedules", (signal) => api.listSchedules(signal), {
    pollMs: 60_000,
  });
  const bisects = useResource("bisects", (signal) => api.listBisects(signal), { pollMs: 30_000 });

  const change = (field: FilterField, value: string) =>
    setQuery(queryFromHistoryFilter({ ...filter, [field]: value }));

  const allKeys = keys.data?.series ?? [];
  const options = filterOptions(allKeys, filter);
  const shown = sortSeries(filterSeries(withPoints.data?.series ?? [], filter));
  const regs = sortRegressions(regressions.data?.regressions ?? []);
  const bySeries = regressionsBySeries(regs);
  const bisectById = new Map((bisects.data?.bisects ?? []).map((b) => [b.id, b]));
  const filtered = FILTER_FIELDS.some((f) => filter[f] !== "");

  return (
    <>
      <h1>History</h1>
      <p class="muted">
        One point per finished run and series (host class, benchmark, config, sweep value, metric):
        the estimate with its interval. Dashed lines mark change points that a calibrated comparison
        confirmed as regressions. Click a point to open its run, or use the Points list under each
        chart.
      </p>

      <section class="panel" aria-labelledby="regressions-h">
        <h2 id="regressions-h">Regressions</h2>
        {regressions.error && !regressions.data && (
          <ErrorView error={regressions.error} what="The regression list" />
        )}
        {!regressions.data && !regressions.error && <Loading what="regressions" />}
        {regressions.data && (
          <RegressionsTable
            regressions={regs}
            bisects={bisectById}
            canOperate={session.canOperate}
            onChanged={regressions.reload}
          />
        )}
      </section>

      <section aria-labelledby="series-h">
        <h2 id="series-h">Series</h2>
        <form
          class="filters"
          role="search"
          aria-label="Filter series"
          onSubmit={(e) => e.preventDefault()}
        >
          {FILTER_FIELDS.map((field) => (
            <label key={field}>
              {FILTER_LABELS[field]}
              <select
                name={field}
                value={filter[field]}
                onChange={(e) => change(field, e.currentTarget.value)}
              >
                <option value="">any</option>
                {options[field].map((v) => (
                  <option key={v} value={v}>
                    {v || "(none)"}
                  </option>
                ))}
              </select>
            </label>
          ))}
          {filtered && (
            <button type="button" onClick={() => setQuery(new URLSearchParams())}>
              Clear filters
            </button>
          )}
        </form>
        {withPoints.error && !withPoints.data && (
          <ErrorView error={withPoints.error} what="The series list" />
        )}
        {!withPoints.data && !withPoints.error && <Loading what="series" />}
        {withPoints.data && shown.length === 0 && (
          <p class="empty" data-testid="series-empty">
            {filtered && allKeys.length > 0 ? (
              <>
                No series match these filters: choose "any" for a filter, or{" "}
                <Link href="/history">show every series</Link>.
              </>
            ) : (
              <>
                No series yet: finished runs add points; nightly schedules add one per night — see{" "}
                <code>tlbfleet schedule add</code> (<code>docs/nightly.md</code>).
              </>
            )}
          </p>
        )}
        {shown.length > MAX_CHARTS && (
          <p class="notice">
            Showing {MAX_CHARTS} of {shown.length} series: choose a benchmark, host class or metric
            to see the others.
          </p>
        )}
        <div class="series-list" data-testid="series-list">
          {shown.slice(0, MAX_CHARTS).map((s) => (
            <SeriesPanel key={s.id} series={s} regressions={bySeries.get(s.id) ?? []} />
          ))}
        </div>
      </section>

      <section class="panel" aria-labelledby="schedules-h">
        <h2 id="schedules-h">Nightly schedules</h2>
        {schedules.error && !schedules.data && (
          <ErrorView error={schedules.error} what="The schedule list" />
        )}
        {!schedules.data && !schedules.error && <Loading what="schedules" />}
        {schedules.data && <SchedulesTable schedules={schedules.data.schedules} />}
      </section>
    </>
  );
}

function SeriesPanel({ series, regressions }: { series: Series; regressions: Regression[] }) {
  const k = series.key;
  const last = series.points.at(-1);
  return (
    <section
      class="panel series"
      data-testid="series"
      data-series={series.id}
      aria-label={seriesTitle(k)}
    >
      <h3>
        {k?.benchmark} <span class="mono">{k?.metric}</span>
        {k?.param && <span class="chip">{k.param}</span>}
      </h3>
      <dl class="facts">
        <dt>host class</dt>
        <dd>{hostClass(k)}</dd>
        <dt>config</dt>
        <dd class="mono">{k?.config || "(defaults)"}</dd>
        <dt>points</dt>
        <dd data-testid="series-count">{series.points.length}</dd>
        <dt>direction</dt>
        <dd>{betterName(series.better)}</dd>
        {last && (
          <>
            <dt>latest</dt>
            <dd>
              {formatValue(last.estimate)} ({formatUnixTime(Math.floor(last.finishedUnixMs / 1000))}
              )
            </dd>
          </>
        )}
      </dl>
      <div class="scroll">
        <SeriesChart series={series} regressions={regressions} />
      </div>
      <details>
        <summary>Points ({series.points.length})</summary>
        <table class="data small">
          <caption class="sr-only">Points of {seriesTitle(k)}, oldest first</caption>
          <thead>
            <tr>
              <th scope="col">run</th>
              <th scope="col">finished (UTC)</th>
              <th scope="col" class="num">
                estimate
              </th>
              <th scope="col">interval</th>
              <th scope="col">arm</th>
              <th scope="col">kernel</th>
              <th scope="col" class="num">
                samples
              </th>
              <th scope="col">from</th>
            </tr>
          </thead>
          <tbody>
            {series.points.map((p) => (
              <tr key={p.runId}>
                <th scope="row">
                  <Link href={runPath(p.runId)} data-testid="series-point" data-run={p.runId}>
                    {p.runId}
                  </Link>
                </th>
                <td>{formatUnixTime(Math.floor(p.finishedUnixMs / 1000))}</td>
                <td class="num">{formatValue(p.estimate)}</td>
                <td>
                  [{formatValue(p.low)}, {formatValue(p.high)}]
                  {p.confidence ? ` (${Math.round(p.confidence * 100)} %)` : ""}
                </td>
                <td>{p.arm}</td>
                <td>{p.kernelRelease || "—"}</td>
                <td class="num">{p.samples}</td>
                <td>{p.scheduleId ? `schedule ${p.scheduleId}` : "by hand"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </section>
  );
}
