// Where a comparison's samples were measured (Report.hosts: one row per arm and machine) and
// which samples it left out and why (Report.excluded), as the controller's report says them.
import type { Report_ArmHost, Report_Excluded } from "../api/gen/tlbfleet/v1/common";
import { hostLabel, shortId } from "../lib/lost-hosts";

function plural(n: number, word: string): string {
  return `${n.toLocaleString("en")} ${word}${n === 1 ? "" : "s"}`;
}

export function ArmHostsView({
  hosts,
  excluded,
  title = "Hosts per arm",
  testId = "arm-hosts",
}: {
  hosts: readonly Report_ArmHost[];
  excluded: readonly Report_Excluded[];
  title?: string;
  testId?: string;
}) {
  if (hosts.length === 0 && excluded.length === 0) return null;
  return (
    <div class="arm-hosts" data-testid={testId}>
      {hosts.length > 0 && (
        <table class="data">
          <caption>{title}</caption>
          <thead>
            <tr>
              <th scope="col">arm</th>
              <th scope="col">host</th>
              <th scope="col">agent</th>
              <th scope="col">machine</th>
              <th scope="col" class="num">
                samples
              </th>
              <th scope="col" class="num">
                boots
              </th>
            </tr>
          </thead>
          <tbody>
            {hosts.map((h) => (
              <tr key={`${h.arm}/${h.agentId}/${h.machineId}`}>
                <td>{h.arm}</td>
                <th scope="row">{h.hostname || "—"}</th>
                <td class="mono small" title={h.agentId}>
                  {shortId(h.agentId) || "—"}
                </td>
                <td class="mono small" title={h.machineId}>
                  {shortId(h.machineId) || "—"}
                </td>
                <td class="num">{h.samples.toLocaleString("en")}</td>
                <td class="num">{h.boots}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {excluded.length > 0 && (
        <ul class="excluded" aria-label="Samples left out" data-testid="excluded">
          {excluded.map((x, i) => (
            <li key={`${x.agentId}/${x.reason}/${i}`}>
              left out: {plural(x.samples, "sample")} of{" "}
              {hostLabel(x.hostname, x.agentId, x.machineId)}, kept for the record: {x.reason}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
