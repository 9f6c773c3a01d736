// Nightly schedules: what adds a point to its series every night, and when it next will.
import { OnRegression_Action, type Schedule } from "../api/gen/tlbfleet/v1/nightly";
import { formatUnixTime } from "../lib/format";
import { runPath } from "../lib/url-state";
import { Link } from "./Link";

function onRegressionText(s: Schedule): string {
  return s.spec?.onRegression?.action === OnRegression_Action.ACTION_BISECT ? "bisect" : "alert";
}

export function SchedulesTable({ schedules }: { schedules: Schedule[] }) {
  if (schedules.length === 0) {
    return (
      <p class="empty" data-testid="schedules-empty">
        No nightly schedules: <code>tlbfleet schedule add FILE.yaml</code> runs a run spec on a cron
        (UTC) and adds its points every night (<code>docs/nightly.md</code>).
      </p>
    );
  }
  return (
    <div class="scroll">
      <table class="data" data-testid="schedules">
        <caption class="sr-only">Nightly schedules</caption>
        <thead>
          <tr>
            <th scope="col">schedule</th>
            <th scope="col">cron (UTC)</th>
            <th scope="col">state</th>
            <th scope="col">next run (UTC)</th>
            <th scope="col">last run</th>
            <th scope="col" class="num">
              runs
            </th>
            <th scope="col">on regression</th>
          </tr>
        </thead>
        <tbody>
          {schedules.map((s) => (
            <tr key={s.id} data-testid="schedule">
              <th scope="row">
                {s.spec?.name} <span class="muted small">({s.id})</span>
              </th>
              <td class="mono">{s.spec?.cron}</td>
              <td>{s.paused ? "paused" : "active"}</td>
              <td>{s.paused ? "—" : formatUnixTime(s.nextSlotUnix)}</td>
              <td>{s.lastRunId ? <Link href={runPath(s.lastRunId)}>{s.lastRunId}</Link> : "—"}</td>
              <td class="num">{s.runs}</td>
              <td>{onRegressionText(s)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
