// The rows of an adaptive run that stops on verdicts (adaptive: {stop: verdict}), issue 22:
// per row (metric, sweep value, arm against the baseline) whether it still gets jobs, its
// verdict once decided, what it used per arm, its ratio and the controller's reason — as
// GetRun gives them (Run.adaptive_rows). The decisions are the controller's; this only shows
// them, as `tlbfleet run RUN` does.
import type { AdaptiveRow } from "../api/gen/tlbfleet/v1/fleet";
import { formatP, sweepLabel } from "../lib/format";

/** "flush_ns entries=64, arm madvise" (the CLI's row label). */
export function adaptiveRowLabel(r: AdaptiveRow): string {
  const sweep = sweepLabel(r.paramName, r.paramValue);
  return `${r.metric}${sweep ? ` ${sweep}` : ""}, arm ${r.arm}`;
}

/** "1 of 2 rows decided, 1 measuring". */
export function adaptiveRowsSummary(rows: readonly AdaptiveRow[]): string {
  const decided = rows.filter((r) => r.decided).length;
  const measuring = rows.filter((r) => r.measuring).length;
  return `${decided} of ${rows.length} rows decided, ${measuring} measuring`;
}

export function AdaptiveRowsView({ rows }: { rows: readonly AdaptiveRow[] }) {
  if (rows.length === 0) return null;
  return (
    <div class="scroll">
      <table class="data adaptive-rows" data-testid="adaptive-rows">
        <caption>
          Sequential verdicts per row: {adaptiveRowsSummary(rows)} (how rows stop:{" "}
          <code>docs/statistics.md</code>, sequential verdicts)
        </caption>
        <thead>
          <tr>
            <th scope="col">row</th>
            <th scope="col">state</th>
            <th scope="col">verdict</th>
            <th scope="col" class="num" title="boots used by the baseline / by the arm">
              boots
            </th>
            <th scope="col" class="num" title="samples used by the baseline / by the arm">
              samples
            </th>
            <th scope="col" class="num" title="arm / baseline at the decision">
              ratio
            </th>
            <th scope="col" class="num">
              p
            </th>
            <th scope="col">why</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr
              key={`${r.metric}/${r.paramName}/${r.paramValue}/${r.arm}`}
              class={r.measuring ? "measuring" : "stopped"}
            >
              <th scope="row">{adaptiveRowLabel(r)}</th>
              <td>{r.measuring ? "measuring" : "stopped"}</td>
              <td class={r.decided && r.verdict ? `verdict-${r.verdict}` : "muted"}>
                {r.decided && r.verdict ? r.verdict : "—"}
              </td>
              <td class="num">
                {r.baseBoots}/{r.armBoots}
              </td>
              <td class="num">
                {r.baseSamples}/{r.armSamples}
              </td>
              <td class="num">{r.ratio !== undefined ? r.ratio.toFixed(4) : "—"}</td>
              <td class="num">{formatP(r.p)}</td>
              <td class="notes">{r.reason || "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
