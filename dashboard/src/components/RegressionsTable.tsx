// The regressions table: open first, each with its series, first bad run, relative change
// with interval, kernels, bisection or note; Acknowledge / Fixed / Reopen for operators only
// (the server checks the role again).
import { useState } from "preact/hooks";
import { api } from "../api";
import {
  BisectStatus,
  RegressionStatus,
  bisectStatusToJSON,
  type BisectState,
  type Regression,
} from "../api/gen/tlbfleet/v1/nightly";
import { useResource } from "../hooks";
import { formatP, formatUnixTime } from "../lib/format";
import { formatRelative, regressionStatusName, seriesHref, seriesTitle } from "../lib/history";
import { runPath } from "../lib/url-state";
import { ErrorView, Loading } from "./common";
import { Link } from "./Link";

export function RegressionsTable({
  regressions,
  bisects,
  canOperate,
  onChanged,
}: {
  regressions: Regression[];
  bisects: Map<string, BisectState>;
  canOperate: boolean;
  onChanged: () => void;
}) {
  const [busy, setBusy] = useState("");
  const [error, setError] = useState("");
  const setStatus = async (r: Regression, status: RegressionStatus) => {
    setBusy(r.id);
    setError("");
    try {
      await api.updateRegression(r.id, status);
      onChanged();
    } catch (e) {
      setError(`${r.id}: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      setBusy("");
    }
  };
  if (regressions.length === 0) {
    return (
      <p class="empty" data-testid="regressions-empty">
        No regressions. Every finished run's series is searched for change points; one that a
        calibrated comparison confirms as worse appears here (and as{" "}
        <code>tlbfleet regressions</code>). A schedule's <code>on_regression</code> can start a
        bisection.
      </p>
    );
  }
  return (
    <>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div class="scroll">
        <table class="data" data-testid="regressions">
          <caption class="sr-only">Regressions, open first</caption>
          <thead>
            <tr>
              <th scope="col">status</th>
              <th scope="col">series</th>
              <th scope="col">first bad run</th>
              <th scope="col">change (interval)</th>
              <th scope="col" class="num">
                p
              </th>
              <th scope="col">kernels (good → bad)</th>
              <th scope="col">bisection / note</th>
              <th scope="col">found (UTC)</th>
              {canOperate && <th scope="col">actions</th>}
            </tr>
          </thead>
          <tbody>
            {regressions.map((r) => {
              const status = regressionStatusName(r.status);
              const bisect = r.bisectId ? bisects.get(r.bisectId) : undefined;
              return (
                <tr key={r.id} data-testid="regression" data-status={status}>
                  <td>
                    <span class={`state regression-${status}`}>{status}</span>
                  </td>
                  <td>
                    <Link href={seriesHref(r.series)}>{seriesTitle(r.series)}</Link>
                  </td>
                  <td>
                    <Link href={runPath(r.firstBadRun)}>{r.firstBadRun}</Link>
                    {r.lastGoodRun && (
                      <div class="muted small">
                        after <Link href={runPath(r.lastGoodRun)}>{r.lastGoodRun}</Link>
                      </div>
                    )}
                  </td>
                  <td>
                    {formatRelative(r.relative)}
                    {r.summary && <div class="muted small">{r.summary}</div>}
                  </td>
                  <td class="num">{formatP(r.p)}</td>
                  <td>
                    {r.badCommit ? (
                      // Kernels built from source: the change lies in good..bad, as git writes it.
                      <span
                        class="mono"
                        data-testid="commit-range"
                        title={`${r.goodCommit}..${r.badCommit}`}
                      >
                        {`${(r.goodCommit || "?").slice(0, 12)}..${r.badCommit.slice(0, 12)}`}
                      </span>
                    ) : r.goodKernel || r.badKernel ? (
                      `${r.goodKernel || "?"} → ${r.badKernel || "?"}`
                    ) : (
                      "—"
                    )}
                  </td>
                  <td>
                    {r.bisectId && <BisectCell id={r.bisectId} state={bisect} />}
                    {r.note && <div class="muted small">{r.note}</div>}
                    {!r.bisectId && !r.note && "—"}
                  </td>
                  <td>{formatUnixTime(r.createdUnix)}</td>
                  {canOperate && (
                    <td class="actions-cell">
                      {r.status !== RegressionStatus.REGRESSION_ACKNOWLEDGED &&
                        r.status !== RegressionStatus.REGRESSION_FIXED && (
                          <button
                            type="button"
                            disabled={busy === r.id}
                            data-testid="ack-regression"
                            onClick={() =>
                              void setStatus(r, RegressionStatus.REGRESSION_ACKNOWLEDGED)
                            }
                          >
                            Acknowledge
                          </button>
                        )}
                      {r.status !== RegressionStatus.REGRESSION_FIXED && (
                        <button
                          type="button"
                          disabled={busy === r.id}
                          data-testid="fix-regression"
                          onClick={() => void setStatus(r, RegressionStatus.REGRESSION_FIXED)}
                        >
                          Fixed
                        </button>
                      )}
                      {r.status !== RegressionStatus.REGRESSION_OPEN && (
                        <button
                          type="button"
                          class="linkish"
                          disabled={busy === r.id}
                          data-testid="reopen-regression"
                          onClick={() => void setStatus(r, RegressionStatus.REGRESSION_OPEN)}
                        >
                          Reopen
                        </button>
                      )}
                    </td>
                  )}
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </>
  );
}

const BISECT_NAMES: Partial<Record<BisectStatus, string>> = {
  [BisectStatus.BISECT_RUNNING]: "running",
  [BisectStatus.BISECT_FOUND]: "found",
  [BisectStatus.BISECT_AMBIGUOUS]: "ambiguous",
  [BisectStatus.BISECT_NOT_REPRODUCED]: "not reproduced",
  [BisectStatus.BISECT_CANCELLED]: "cancelled",
  [BisectStatus.BISECT_FAILED]: "failed",
};

/** A bisection's id and status, and its text report on demand. */
function BisectCell({ id, state }: { id: string; state: BisectState | undefined }) {
  const [open, setOpen] = useState(false);
  const report = useResource(`bisect-${id}`, (signal) => api.getBisect(id, signal), {
    enabled: open,
  });
  const status = state ? (BISECT_NAMES[state.status] ?? bisectStatusToJSON(state.status)) : "";
  return (
    <div data-testid="bisect">
      bisection <span class="mono">{id}</span>
      {status && `: ${status}`}
      {state?.firstBad && (
        <>
          {" "}
          (first bad <span class="mono">{state.firstBad}</span>)
        </>
      )}{" "}
      <button type="button" class="linkish" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? "hide report" : "report"}
      </button>
      {open && report.data && <pre class="text-report">{report.data.report}</pre>}
      {open && report.error && <ErrorView error={report.error} what="The bisection" />}
      {open && !report.data && !report.error && <Loading what="the report" />}
    </div>
  );
}
