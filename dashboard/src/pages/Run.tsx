// Run: live progress over SSE while it runs, then the run's one report (the controller's
// comparison: the mmtests table, the verdicts, the charts, the flush profile per arm, a ceiling
// sweep's recommendation) and the raw samples as the controller's CSV. Cancel for operators.
// Slots waiting for a silent host are said first, the work measured again and the hosts each
// arm was measured on with the rest (issue 26). A run with kernel arms built from source shows
// its builds, their logs' last lines growing with the run's events (issue 21). An adaptive run
// with stop: verdict shows its rows in the progress section, live and after it stopped
// (issue 22).
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api } from "../api";
import { ApiError } from "../api/errors";
import type { Report } from "../api/gen/tlbfleet/v1/common";
import type { Run } from "../api/gen/tlbfleet/v1/fleet";
import { isTerminal, RunEventStream, type StreamStatus } from "../api/sse";
import { AdaptiveRowsView } from "../components/AdaptiveRows";
import { ArmHostsView } from "../components/ArmHosts";
import { CeilingRecommendations } from "../components/CeilingRecommendations";
import { MetricChartView } from "../components/Chart";
import { ComparisonBlock } from "../components/ComparisonTable";
import { ErrorView, Loading, Section, StateBadge } from "../components/common";
import { ExportLinks } from "../components/ExportLinks";
import { FlushProfileView } from "../components/FlushProfile";
import { KernelBuildsView } from "../components/KernelBuilds";
import { Link } from "../components/Link";
import { AbandonedWorkTable, WaitingNotice } from "../components/LostHosts";
import { setQuery, useResource, useSession, useTitle, type Location } from "../hooks";
import { buildEventNeedsRun, kernelText, mergeBuilds } from "../lib/builds";
import { chartsFromReport } from "../lib/chart-data";
import { formatDuration, formatUnixTime, sweepLabel } from "../lib/format";
import { clockTime, policyText } from "../lib/lost-hosts";
import { applyEvent, emptyProgress, type Progress } from "../lib/progress";
import { buildBlocks } from "../lib/table";

/** After a build changed state the run is read again, once for a burst (a replayed stream). */
const BUILD_RELOAD_MS = 300;

/**
 * The run's events while it is not finished. `reload` reads the run again: at the stream's end,
 * when a slot's host went silent, came back or was given up on, or an adaptive decision was
 * taken (the run's waiting slots, its adaptive rows and its work measured again are the
 * controller's, read with the run), and when a kernel build changed state (its builder, build
 * id and release are the run's, not the event's).
 */
function useRunProgress(runId: string, run: Run | undefined, reload: () => void) {
  const [progress, setProgress] = useState<Progress>(emptyProgress);
  const [status, setStatus] = useState<StreamStatus>({ kind: "connecting" });
  const live = run !== undefined && !isTerminal(run.state);
  // The builds as last read, for the stream's handler (which lives as long as the stream).
  const builds = useRef(run?.builds ?? []);
  builds.current = run?.builds ?? [];
  useEffect(() => {
    if (!live) return;
    let buildReload: ReturnType<typeof setTimeout> | undefined;
    const stream = new RunEventStream(
      api,
      runId,
      {
        onEvent: (e) => {
          setProgress((p) => applyEvent(p, e));
          // A slot's host, or an adaptive decision (the rows' states and verdicts are the run's).
          if (e.slotHost || e.adaptive) reload();
          if (e.build && !buildReload && buildEventNeedsRun(builds.current, e.build)) {
            buildReload = setTimeout(() => {
              buildReload = undefined;
              reload();
            }, BUILD_RELOAD_MS);
          }
        },
        onStatus: (s) => {
          setStatus(s);
          if (s.kind === "ended") reload();
        },
      },
      { runEnded: async () => isTerminal((await api.getRun(runId)).state) },
    );
    void stream.run();
    return () => {
      stream.close();
      if (buildReload) clearTimeout(buildReload);
    };
  }, [runId, live, reload]);
  return { progress, status, live };
}

function JobBar({ run, progress }: { run: Run; progress: Progress }) {
  const jobs = progress.jobs ?? run.jobs;
  if (!jobs || jobs.total === 0)
    return <p class="muted">No jobs yet (they appear when a host takes the run).</p>;
  const done = jobs.succeeded + jobs.failed + jobs.cancelled;
  return (
    <div>
      <progress max={jobs.total} value={done} aria-label="jobs done" data-testid="job-progress" />
      <span data-testid="job-counts">
        {" "}
        {done} of {jobs.total} jobs done · {jobs.running} running · {jobs.queued} queued
        {jobs.failed > 0 && ` · ${jobs.failed} failed`}
      </span>
    </div>
  );
}

function LivePanel({
  run,
  progress,
  status,
}: {
  run: Run;
  progress: Progress;
  status: StreamStatus;
}) {
  const statusText =
    status.kind === "live"
      ? "live"
      : status.kind === "retrying"
        ? `reconnecting in ${Math.round(status.inMs / 1000)} s (${status.reason})`
        : status.kind === "failed"
          ? `stopped: ${status.error.message}`
          : status.kind;
  return (
    <Section title="Progress" id="progress">
      <p class="muted small" data-testid="stream-status">
        Event stream: {statusText} · {progress.samples.toLocaleString("en")} samples ·{" "}
        {progress.reboots} reboots · {progress.adaptiveRounds} adaptive rounds
      </p>
      <AdaptiveRowsView rows={run.adaptiveRows} />
      {progress.hosts.length > 0 && (
        <table class="data">
          <caption>Jobs per host</caption>
          <thead>
            <tr>
              <th scope="col">host</th>
              <th scope="col">now</th>
              <th scope="col" class="num">
                running
              </th>
              <th scope="col" class="num">
                succeeded
              </th>
              <th scope="col" class="num">
                failed
              </th>
              <th scope="col" class="num">
                cancelled
              </th>
              <th scope="col" class="num">
                lost leases
              </th>
            </tr>
          </thead>
          <tbody>
            {progress.hosts.map((h) => (
              <tr key={h.host}>
                <th scope="row">{h.host}</th>
                <td>
                  {h.rebooting
                    ? "rebooting"
                    : h.silentSinceMs
                      ? `silent since ${clockTime(h.silentSinceMs, Date.now())}`
                      : h.current || "idle"}
                </td>
                <td class="num">{h.counts.running}</td>
                <td class="num">{h.counts.succeeded}</td>
                <td class="num">{h.counts.failed}</td>
                <td class="num">{h.counts.cancelled}</td>
                <td class="num">{h.counts.requeued}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <ol class="log" aria-live="polite" aria-label="Run events" data-testid="event-log">
        {progress.log.slice(-15).map((l) => (
          <li key={l.id} class={`tone-${l.tone}`}>
            <time>{new Date(l.timeMs).toISOString().slice(11, 19)}</time> {l.text}
          </li>
        ))}
      </ol>
    </Section>
  );
}

/** "threads=1", … : the sweep values of the report, in its order (for the flush profile). */
function sweepValues(report: Report | undefined): { value: string; label: string }[] {
  const out: { value: string; label: string }[] = [];
  for (const g of report?.groups ?? []) {
    if (!out.some((v) => v.value === g.paramValue)) {
      out.push({ value: g.paramValue, label: sweepLabel(g.paramName, g.paramValue) });
    }
  }
  return out;
}

/**
 * The samples as the controller writes them (GET …/results.csv, the bytes of `tlbfleet
 * results --format csv`), fetched through the API client when asked for, saved as a file.
 */
function CsvDownload({ runId }: { runId: string }) {
  const [state, setState] = useState<{ busy: boolean; error?: Error }>({ busy: false });
  const download = async () => {
    setState({ busy: true });
    try {
      const blob = await api.resultsCsv(runId);
      const url = URL.createObjectURL(blob);
      const a = document.createElement("a");
      a.href = url;
      a.download = `run-${runId}-samples.csv`;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      setState({ busy: false });
    } catch (e) {
      setState({ busy: false, error: e instanceof Error ? e : new Error(String(e)) });
    }
  };
  return (
    <>
      <p>
        <button
          type="button"
          onClick={() => void download()}
          disabled={state.busy}
          data-testid="csv-download"
        >
          {state.busy ? "Fetching the samples…" : "Download every sample as CSV"}
        </button>{" "}
        <span class="muted">
          (the same file as <code>tlbfleet results {runId} --format csv</code>)
        </span>
      </p>
      {state.error && <ErrorView error={state.error} what="The samples" />}
    </>
  );
}

function Results({ run, location }: { run: Run; location: Location }) {
  const baseline = location.query.get("baseline") ?? "";
  const flushParam = location.query.get("flush") ?? "";
  // The run's one report: the table, verdicts, hosts, charts, flush profiles and ceiling
  // recommendations all come from it (GET …/compare, as `tlbfleet compare` shows it).
  const compare = useResource(`compare/${run.id}/${baseline}/${flushParam}`, (s) =>
    api.compare(run.id, { baseline, flushParam }, s),
  );
  const report = compare.data?.report;
  const blocks = useMemo(() => (report ? buildBlocks(report) : []), [report]);
  const charts = useMemo(() => (report ? chartsFromReport(report) : []), [report]);
  const sweeps = useMemo(() => sweepValues(report), [report]);
  // A choice of sweep value for the flush profiles (CompareRequest.flush_param), in the URL.
  const flushChoice =
    sweeps.length > 1 && (flushParam !== "" || (report?.flushProfiles.length ?? 0) > 0);
  const arms = run.spec?.arms.map((a) => a.name) ?? [];
  const setParam = (name: string, value: string) => {
    const q = new URLSearchParams(location.query);
    if (value) q.set(name, value);
    else q.delete(name);
    setQuery(q);
  };

  return (
    <>
      <Section title="Comparison" id="comparison">
        {arms.length > 1 && (
          <label>
            Baseline{" "}
            <select
              value={baseline || arms[0]}
              onChange={(e) =>
                setParam("baseline", e.currentTarget.value === arms[0] ? "" : e.currentTarget.value)
              }
            >
              {arms.map((a) => (
                <option key={a}>{a}</option>
              ))}
            </select>
          </label>
        )}
        {compare.error && <ErrorView error={compare.error} what="The comparison" />}
        {!compare.data && !compare.error && <Loading what="the comparison" />}
        {report?.ceilings && (
          <p class="muted" data-testid="report-ceilings">
            {report.ceilings}
          </p>
        )}
        {report && <ArmHostsView hosts={report.hosts} excluded={report.excluded} />}
        {blocks.map((b) => (
          <ComparisonBlock key={b.metric} block={b} />
        ))}
        {compare.data?.text && (
          <details>
            <summary>As text (tlbfleet compare)</summary>
            <pre class="text-report">{compare.data.text}</pre>
          </details>
        )}
      </Section>
      <Section title="Charts" id="charts">
        <div class="charts">
          {charts.map((c) => (
            <MetricChartView key={c.metric} chart={c} />
          ))}
        </div>
      </Section>
      {report && report.ceilingRecommendations.length > 0 && (
        <Section title="Ceiling recommendation" id="ceiling">
          <CeilingRecommendations recommendations={report.ceilingRecommendations} />
        </Section>
      )}
      <Section title="TLB flush profile" id="flush">
        {flushChoice && (
          <label>
            Sweep value{" "}
            <select
              value={flushParam}
              onChange={(e) => setParam("flush", e.currentTarget.value)}
              data-testid="flush-param"
            >
              <option value="">all</option>
              {sweeps.map((v) => (
                <option key={v.value} value={v.value}>
                  {v.label}
                </option>
              ))}
            </select>
          </label>
        )}
        {report && <FlushProfileView profiles={report.flushProfiles} />}
      </Section>
      <Section title="Raw samples" id="samples">
        <CsvDownload runId={run.id} />
      </Section>
    </>
  );
}

export function RunPage({ runId, location }: { runId: string; location: Location }) {
  const session = useSession();
  // While a slot waits for a silent host the run is read again every 10 s, so that its
  // waiting list and the controller's messages stay current (the seconds count in between).
  const [waiting, setWaiting] = useState(false);
  const run = useResource(`run/${runId}`, (signal) => api.getRun(runId, signal), {
    pollMs: waiting ? 10_000 : undefined,
  });
  const nowWaiting =
    run.data !== undefined && !isTerminal(run.data.state) && run.data.waitingFor.length > 0;
  useEffect(() => setWaiting(nowWaiting), [nowWaiting]);
  const { progress, status, live } = useRunProgress(runId, run.data, run.reload);
  const [cancelError, setCancelError] = useState("");
  const builds = useMemo(
    () => mergeBuilds(run.data?.builds ?? [], progress.builds),
    [run.data?.builds, progress.builds],
  );
  useTitle(run.data?.spec?.name ? `Run ${runId} ${run.data.spec.name}` : `Run ${runId}`);

  if (run.error && !run.data) return <ErrorView error={run.error} what={`Run ${runId}`} />;
  if (!run.data) return <Loading what={`run ${runId}`} />;
  const r = run.data;
  const state = progress.state !== undefined && live ? progress.state : r.state;
  const cancel = async () => {
    if (!window.confirm(`Cancel run ${r.id}? Queued jobs will not run.`)) return;
    setCancelError("");
    try {
      await api.cancelRun(r.id);
      run.reload();
    } catch (e) {
      setCancelError(e instanceof ApiError ? e.message : String(e));
    }
  };

  return (
    <>
      <h1>
        Run {r.id}: {r.spec?.name} <StateBadge state={state} />
      </h1>
      {!isTerminal(state) && <WaitingNotice waiting={r.waitingFor} />}
      <dl class="facts">
        <dt>benchmark</dt>
        <dd>{r.spec?.benchmark}</dd>
        <dt>arms</dt>
        <dd data-testid="arms">
          {r.spec?.arms
            .map((a) => {
              const about = [
                a.kernel ? kernelText(a.kernel) : "",
                a.ceiling ? `ceiling ${a.ceiling}` : "",
              ].filter((t) => t !== "");
              return about.length > 0 ? `${a.name} (${about.join(", ")})` : a.name;
            })
            .join(", ")}
        </dd>
        <dt>created</dt>
        <dd>{formatUnixTime(r.createdUnix)}</dd>
        {r.finishedUnix > 0 && (
          <>
            <dt>finished</dt>
            <dd>
              {formatUnixTime(r.finishedUnix)} ({formatDuration(r.finishedUnix - r.createdUnix)})
            </dd>
          </>
        )}
        <dt>plan</dt>
        <dd>
          {r.iterationsPerBoot} iterations × {r.boots || 1} boots
          {r.adaptiveRounds > 0 && `, ${r.adaptiveRounds} adaptive rounds`}
        </dd>
        {r.onHostLost?.action && (
          <>
            <dt>if a host is lost</dt>
            <dd data-testid="on-host-lost">
              {policyText(r.onHostLost)}
              {!r.spec?.onHostLost?.action && (
                <span class="muted small"> (the default for this run's design)</span>
              )}
            </dd>
          </>
        )}
        {(r.stopReason || progress.reason) && (
          <>
            <dt>why it stopped</dt>
            <dd data-testid="stop-reason">{r.stopReason || progress.reason}</dd>
          </>
        )}
        {r.error && (
          <>
            <dt>error</dt>
            <dd class="error">{r.error}</dd>
          </>
        )}
      </dl>
      <JobBar run={r} progress={progress} />
      <AbandonedWorkTable abandoned={r.abandoned} />
      {session.canOperate && !isTerminal(state) && (
        <p>
          <button type="button" class="danger" onClick={cancel} data-testid="cancel-run">
            Cancel run
          </button>
          {cancelError && (
            <span class="field-error" role="alert">
              {" "}
              {cancelError}
            </span>
          )}
        </p>
      )}
      <p>
        <Link href={`/compare?a=${encodeURIComponent(r.id)}`}>Compare with another run…</Link>
      </p>
      <ExportLinks runId={r.id} state={state} />
      <KernelBuildsView builds={builds} />
      {live && <LivePanel run={r} progress={progress} status={status} />}
      {!live && r.adaptiveRows.length > 0 && (
        <Section title="Progress" id="progress">
          <AdaptiveRowsView rows={r.adaptiveRows} />
        </Section>
      )}
      {!live && <Results run={r} location={location} />}
    </>
  );
}
