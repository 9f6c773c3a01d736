// Runs: history with filters (benchmark, host, state, name, dates) and keyset paging; the
// filters and the page are in the URL. Next to a run's state: the hosts it waits for and the
// work it measured again.
import { api } from "../api";
import { RunState } from "../api/gen/tlbfleet/v1/fleet";
import { ErrorView, Loading, StateBadge } from "../components/common";
import { Link } from "../components/Link";
import { setQuery, useResource, useTitle, type Location } from "../hooks";
import { formatUnixTime, RUN_STATE_NAMES } from "../lib/format";
import { runNotes } from "../lib/lost-hosts";
import {
  listRunsRequest,
  nextPage,
  previousPage,
  queryFromRunsFilter,
  runPath,
  runsFilterFromQuery,
  withFilter,
  type RunsFilter,
} from "../lib/url-state";

export function RunsPage({ location }: { location: Location }) {
  useTitle("Runs");
  const filter = runsFilterFromQuery(location.query);
  const key = queryFromRunsFilter(filter).toString();
  const runs = useResource(
    `runs?${key}`,
    (signal) => api.listRuns(listRunsRequest(filter), signal),
    {
      // Only a page that shows unfinished runs changes by itself.
      pollMs: 10_000,
    },
  );
  const go = (f: RunsFilter, push = false) => setQuery(queryFromRunsFilter(f), { push });
  const change = (c: Partial<RunsFilter>) => go(withFilter(filter, c));
  const toggleState = (s: string) =>
    change({
      states: filter.states.includes(s)
        ? filter.states.filter((x) => x !== s)
        : [...filter.states, s],
    });

  const list = runs.data?.runs ?? [];
  return (
    <>
      <h1>Runs</h1>
      <form
        class="filters"
        role="search"
        aria-label="Filter runs"
        onSubmit={(e) => e.preventDefault()}
      >
        <label>
          Name contains
          <input
            name="name"
            value={filter.name}
            onInput={(e) => change({ name: e.currentTarget.value })}
          />
        </label>
        <label>
          Benchmark
          <input
            name="benchmark"
            value={filter.benchmark}
            onInput={(e) => change({ benchmark: e.currentTarget.value })}
          />
        </label>
        <label>
          Host
          <input
            name="host"
            value={filter.host}
            onInput={(e) => change({ host: e.currentTarget.value })}
          />
        </label>
        <label>
          From
          <input
            type="date"
            name="from"
            value={filter.from}
            onInput={(e) => change({ from: e.currentTarget.value })}
          />
        </label>
        <label>
          To
          <input
            type="date"
            name="to"
            value={filter.to}
            onInput={(e) => change({ to: e.currentTarget.value })}
          />
        </label>
        <fieldset class="inline">
          <legend>State</legend>
          {RUN_STATE_NAMES.map((s) => (
            <label key={s} class="check">
              <input
                type="checkbox"
                checked={filter.states.includes(s)}
                onChange={() => toggleState(s)}
              />
              {s}
            </label>
          ))}
        </fieldset>
      </form>
      {runs.error && !runs.data && <ErrorView error={runs.error} what="The run list" />}
      {!runs.data && !runs.error && <Loading what="runs" />}
      {runs.data && (
        <>
          <table class="data" data-testid="runs">
            <caption class="sr-only">Runs, newest first</caption>
            <thead>
              <tr>
                <th scope="col">run</th>
                <th scope="col">name</th>
                <th scope="col">benchmark</th>
                <th scope="col">arms</th>
                <th scope="col">state</th>
                <th scope="col" class="num">
                  jobs done
                </th>
                <th scope="col">created (UTC)</th>
              </tr>
            </thead>
            <tbody>
              {list.map((r) => {
                const done =
                  (r.jobs?.succeeded ?? 0) + (r.jobs?.failed ?? 0) + (r.jobs?.cancelled ?? 0);
                return (
                  <tr key={r.id}>
                    <th scope="row">
                      <Link href={runPath(r.id)}>{r.id}</Link>
                    </th>
                    <td>{r.spec?.name}</td>
                    <td>{r.spec?.benchmark}</td>
                    <td>{r.spec?.arms.map((a) => a.name).join(", ")}</td>
                    <td>
                      <StateBadge state={r.state} />
                      {runNotes(r).length > 0 && (
                        <div class="small" data-testid="run-notes">
                          {runNotes(r).join(", ")}
                        </div>
                      )}
                      {r.state === RunState.RUN_STATE_FAILED && r.error && (
                        <div class="muted small">{r.error}</div>
                      )}
                    </td>
                    <td class="num">
                      {done} / {r.jobs?.total ?? 0}
                    </td>
                    <td>{formatUnixTime(r.createdUnix)}</td>
                  </tr>
                );
              })}
              {list.length === 0 && (
                <tr>
                  <td colSpan={7} class="muted">
                    No runs match.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
          <nav class="pager" aria-label="Pages">
            <button
              type="button"
              disabled={!filter.page}
              onClick={() => go(withFilter(filter, {}), true)}
            >
              Newest
            </button>
            <button
              type="button"
              disabled={!filter.page}
              onClick={() => go(previousPage(filter), true)}
            >
              Newer
            </button>
            <button
              type="button"
              disabled={!runs.data.nextPageToken}
              onClick={() => go(nextPage(filter, runs.data!.nextPageToken), true)}
            >
              Older
            </button>
          </nav>
        </>
      )}
    </>
  );
}
