// A run's lost hosts (issue 26): the slots that wait for a silent host, with the controller's
// message and how long it has been silent (counted here, every second, from the time the
// controller gives), and the work that was measured again. The decisions are the
// controller's; this only shows them.
import type { AbandonedWork, LostHost } from "../api/gen/tlbfleet/v1/fleet";
import { useNow } from "../hooks";
import { formatUnixTime } from "../lib/format";
import {
  abandonedCounts,
  abandonedWhat,
  hostLabel,
  shortId,
  silentForText,
} from "../lib/lost-hosts";

/** The slots of a running run that wait for their host: the first thing its page says. */
export function WaitingNotice({ waiting }: { waiting: readonly LostHost[] }) {
  const now = useNow(1000);
  if (waiting.length === 0) return null;
  return (
    <section class="waiting notice" aria-labelledby="waiting-h" data-testid="waiting-for">
      <h2 id="waiting-h">
        {waiting.length === 1
          ? "Waiting for a silent host"
          : `Waiting for ${waiting.length} silent hosts`}
      </h2>
      <ul>
        {waiting.map((w) => (
          <li key={w.slot} data-testid={`waiting-slot-${w.slot}`}>
            <p class="message" data-testid="waiting-message">
              {w.message || `waiting for ${hostLabel(w.hostname, w.agentId, w.machineId)}`}
            </p>
            <p class="small">
              <strong data-testid="silent-for">{silentForText(w, now)}</strong>
              <span class="muted">
                {" "}
                · slot {w.slot} · {hostLabel(w.hostname, w.agentId, w.machineId)}
              </span>
            </p>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** Work measured again (a slot restarted, a boot cut short): what, on which host, and why. */
export function AbandonedWorkTable({ abandoned }: { abandoned: readonly AbandonedWork[] }) {
  if (abandoned.length === 0) return null;
  return (
    <div class="scroll">
      <table class="data abandoned" data-testid="abandoned">
        <caption>
          Measured again (the first measurement's samples are kept and left out of every comparison)
        </caption>
        <thead>
          <tr>
            <th scope="col">what</th>
            <th scope="col">host</th>
            <th scope="col">boot</th>
            <th scope="col">when (UTC)</th>
            <th scope="col">kept</th>
            <th scope="col">why</th>
          </tr>
        </thead>
        <tbody>
          {abandoned.map((w, i) => (
            <tr key={`${w.slot}/${w.bootIndex}/${i}`}>
              <th scope="row">{abandonedWhat(w)}</th>
              <td>{hostLabel(w.hostname, w.agentId, w.machineId)}</td>
              <td class="mono small" title={w.bootId}>
                {shortId(w.bootId) || "—"}
              </td>
              <td>{formatUnixTime(Math.floor(w.timeUnixMs / 1000))}</td>
              <td>{abandonedCounts(w)}</td>
              <td class="notes">{w.reason}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
