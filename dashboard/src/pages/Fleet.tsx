// Fleet (the landing page): every host, what it is, whether its flush ceiling can be written
// and why not, and what it does now; a silent host names the runs that wait for it.
import { api } from "../api";
import { ErrorView, Loading } from "../components/common";
import { Link } from "../components/Link";
import { setQuery, useNow, useResource, useTitle, type Location } from "../hooks";
import {
  ceilingText,
  hostFilterFromQuery,
  hostState,
  matchesHost,
  microarchs,
  queryFromHostFilter,
  uptimeText,
  type HostFilter,
} from "../lib/fleet";
import { formatAgo } from "../lib/format";
import {
  clockTime,
  elapsedSeconds,
  formatSeconds,
  waitedOnWords,
  type WaitedOn,
} from "../lib/lost-hosts";

/** "runs 3, 7 wait for it since 01:12:36 UTC (5 min)", each run a link. */
function WaitedOnText({ w, now }: { w: WaitedOn; now: number }) {
  const { lead, tail } = waitedOnWords(w);
  return (
    <div class="small" data-testid="waited-on">
      {lead}{" "}
      {w.runIds.map((id, i) => (
        <span key={id}>
          {i > 0 && ", "}
          <Link href={`/runs/${id}`}>{id}</Link>
        </span>
      ))}{" "}
      {tail}
      {w.sinceMs > 0 &&
        ` since ${clockTime(w.sinceMs, now)} (${formatSeconds(elapsedSeconds(w.sinceMs, now))})`}
      {w.rebooting && "; it was asked to reboot and is not back"}
    </div>
  );
}

export function FleetPage({ location }: { location: Location }) {
  useTitle("Fleet");
  const hosts = useResource("hosts", (signal) => api.hosts(signal), { pollMs: 5000 });
  const now = useNow(5000);
  const filter = hostFilterFromQuery(location.query);
  const update = (change: Partial<HostFilter>) =>
    setQuery(queryFromHostFilter({ ...filter, ...change }));

  const all = hosts.data?.hosts ?? [];
  const shown = all.filter((h) => matchesHost(h, filter));
  return (
    <>
      <h1>Fleet</h1>
      <form
        class="filters"
        role="search"
        aria-label="Filter hosts"
        onSubmit={(e) => e.preventDefault()}
      >
        <label>
          Labels
          <input
            name="label"
            value={filter.label}
            placeholder="rack=a, lab"
            onInput={(e) => update({ label: e.currentTarget.value })}
          />
        </label>
        <label>
          Microarchitecture
          <select
            name="microarch"
            value={filter.microarch}
            onChange={(e) => update({ microarch: e.currentTarget.value })}
          >
            <option value="">any</option>
            {microarchs(all).map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </label>
        <span class="muted" aria-live="polite">
          {shown.length} of {all.length} hosts
        </span>
      </form>
      {hosts.error && !hosts.data && <ErrorView error={hosts.error} what="The host list" />}
      {!hosts.data && !hosts.error && <Loading what="hosts" />}
      {hosts.data && (
        <div class="scroll">
          <table class="data" data-testid="hosts">
            <caption class="sr-only">Hosts</caption>
            <thead>
              <tr>
                <th scope="col">host</th>
                <th scope="col">state</th>
                <th scope="col">microarch</th>
                <th scope="col" class="num">
                  CPUs
                </th>
                <th scope="col" class="num">
                  dTLB 4K
                </th>
                <th scope="col">kernel</th>
                <th scope="col">boot</th>
                <th scope="col">uptime</th>
                <th scope="col">flush ceiling</th>
                <th scope="col">labels</th>
                <th scope="col">reboot</th>
                <th scope="col">last heartbeat</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((h) => {
                const s = hostState(h);
                const c = ceilingText(h);
                const info = h.info;
                return (
                  <tr key={h.agentId} data-testid={`host-${h.agentId}`}>
                    <th scope="row">
                      {info?.hostname || h.agentId}
                      <div class="muted small mono" title={h.agentId}>
                        {h.agentId.slice(0, 12)}
                      </div>
                    </th>
                    <td>
                      <span class={`state state-${s.state}`}>{s.state}</span>
                      {s.waitedOn && <WaitedOnText w={s.waitedOn} now={now} />}
                      {s.detail && (
                        <div class="muted small">
                          {s.runId ? <Link href={`/runs/${s.runId}`}>{s.detail}</Link> : s.detail}
                        </div>
                      )}
                    </td>
                    <td>{info?.cpu?.microarch || "unknown"}</td>
                    <td class="num">{info?.logicalCpus ?? "—"}</td>
                    <td class="num">{info?.cpu?.dtlb4kEntries || "—"}</td>
                    <td>
                      {info?.kernelRelease}
                      <div class="muted small cmdline" title={info?.kernelCmdline}>
                        {info?.kernelCmdline}
                      </div>
                    </td>
                    <td class="mono small" title={info?.bootId}>
                      {info?.bootId.slice(0, 8) || "—"}
                    </td>
                    <td data-testid="uptime">{uptimeText(h, now)}</td>
                    <td class={c.writable ? "" : "locked"}>{c.text}</td>
                    <td>
                      {Object.entries(info?.labels ?? {}).map(([k, v]) => (
                        <span class="chip" key={k}>
                          {v ? `${k}=${v}` : k}
                        </span>
                      ))}
                    </td>
                    <td>{info?.canReboot ? "yes" : "no"}</td>
                    <td>{formatAgo(h.lastSeenUnix, now)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
