// The TLB flush profile per arm (Report.flush_profiles): a histogram of tlb:tlb_flush events
// by size (the share of the arm's events per page bucket, "full flush" first), the local mm
// shootdowns by size with their cost per call (the 2014 table), events by reason, and what
// makes the counts incomplete. Side by side, on the same axes, it shows whether the arms really
// flushed differently.
import { useEffect, useMemo, useRef } from "preact/hooks";
import uPlot, { type Options } from "uplot";
import type { FlushProfile } from "../api/gen/tlbfleet/v1/common";
import {
  bucketLabel,
  countText,
  hasCost,
  hasWorkloadTable,
  percentsOn,
  percentText,
  profileNotes,
  reasonRows,
  sharedBuckets,
} from "../lib/flush";
import { formatValue } from "../lib/format";
import { armColour } from "./Chart";

function Histogram({
  profile,
  buckets,
  colour,
  yMax,
}: {
  profile: FlushProfile;
  buckets: string[];
  colour: string;
  yMax: number;
}) {
  const ref = useRef<HTMLDivElement>(null);
  const percents = useMemo(() => percentsOn(profile, buckets), [profile, buckets]);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const xs = buckets.map((_, i) => i);
    const opts: Options = {
      width: Math.max(280, Math.min(560, 60 + buckets.length * 36)),
      height: 220,
      legend: { show: false },
      cursor: { show: false },
      scales: { x: { time: false, range: [-0.5, buckets.length - 0.5] }, y: { range: [0, yMax] } },
      series: [
        {},
        {
          label: profile.arm,
          stroke: colour,
          fill: `${colour}aa`,
          paths: uPlot.paths.bars!({ size: [0.7, 40] }),
          points: { show: false },
        },
      ],
      axes: [
        {
          splits: () => xs,
          values: (_u, splits) =>
            splits.map((v) => (buckets[v] === "-1" ? "full" : (buckets[v] ?? ""))),
          label: "pages per flush",
        },
        { label: "% of events", size: 50 },
      ],
    };
    const plot = new uPlot(opts, [xs, percents], el);
    return () => plot.destroy();
  }, [profile, buckets, colour, yMax, percents]);
  const points = percents.filter((p) => p > 0).length;
  const description = buckets
    .map((b, i) => `${bucketLabel(b)} ${percents[i]!.toFixed(1)}%`)
    .join(", ");
  return (
    <figure class="chart" data-testid={`flush-${profile.arm}`} data-points={points}>
      <figcaption>
        {profile.arm}: {countText(profile.total)} flushes in {profile.iterations} iterations
        {profile.lost > 0 ? `, ${countText(profile.lost)} lost` : ""}
        {profile.scope === "system" ? " (system-wide)" : ""}
      </figcaption>
      <div ref={ref} role="img" aria-label={`${profile.arm} flush sizes: ${description}`} />
    </figure>
  );
}

/** One arm's local mm shootdowns by size: share, running share and, where timed, cost per call. */
function LocalShootdowns({ profile }: { profile: FlushProfile }) {
  const rows = profile.localMmShootdowns;
  const cost = hasCost(rows);
  const unit = profile.costUnit || "cost";
  return (
    <table class="data" data-testid={`flush-local-${profile.arm}`}>
      <caption>{profile.arm}: local mm shootdowns by size</caption>
      <thead>
        <tr>
          <th scope="col">size</th>
          <th scope="col" class="num">
            events
          </th>
          <th scope="col" class="num">
            percent
          </th>
          <th scope="col" class="num">
            percent≤
          </th>
          {cost && (
            <>
              <th scope="col" class="num">
                calls
              </th>
              <th scope="col" class="num">
                mean {unit}
              </th>
              <th scope="col" class="num">
                p50
              </th>
              <th scope="col" class="num">
                p90
              </th>
              <th scope="col" class="num">
                p99
              </th>
            </>
          )}
        </tr>
      </thead>
      <tbody>
        {rows.map((b) => (
          <tr key={b.bucket}>
            <th scope="row">{b.bucket === "-1" ? "full flush" : b.bucket}</th>
            <td class="num">{countText(b.events)}</td>
            <td class="num">{percentText(b.percent)}</td>
            <td class="num">{percentText(b.cumulativePercent)}</td>
            {cost && (
              <>
                <td class="num">{countText(b.calls)}</td>
                <td class="num">{formatValue(b.costMean)}</td>
                <td class="num">{formatValue(b.costP50)}</td>
                <td class="num">{formatValue(b.costP90)}</td>
                <td class="num">{formatValue(b.costP99)}</td>
              </>
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function FlushProfileView({ profiles }: { profiles: readonly FlushProfile[] }) {
  const buckets = useMemo(() => sharedBuckets(profiles), [profiles]);
  if (profiles.length === 0) {
    return (
      <p class="muted" data-testid="flush-none">
        No flush profile in this run (add <code>monitors: [flush_profile]</code> to the run spec).
      </p>
    );
  }
  const reasons = reasonRows(profiles);
  const notes = profileNotes(profiles);
  const yMax = Math.min(
    100,
    Math.max(10, ...profiles.flatMap((p) => percentsOn(p, buckets))) * 1.1,
  );
  return (
    <div data-testid="flush-profile">
      <p class="muted small">
        Every event of each arm by size
        {hasWorkloadTable(profiles)
          ? " (the workload's own flushes)"
          : " (recorded system-wide by an older agent, without the table by reason and size)"}
        , summed over its iterations by the controller.
      </p>
      <div class="charts">
        {profiles.map((p, i) => (
          <Histogram key={p.arm} profile={p} buckets={buckets} colour={armColour(i)} yMax={yMax} />
        ))}
      </div>
      {hasWorkloadTable(profiles) && (
        <div class="charts" data-testid="flush-local">
          {profiles.map((p) => (
            <LocalShootdowns key={p.arm} profile={p} />
          ))}
        </div>
      )}
      <table class="data" data-testid="flush-reasons">
        <caption>Flushes by reason (events, summed over iterations)</caption>
        <thead>
          <tr>
            <th scope="col">reason</th>
            {profiles.map((p) => (
              <th scope="col" key={p.arm} class="num">
                {p.arm}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {reasons.map((r) => (
            <tr key={r.code}>
              <th scope="row">
                {r.code} {r.name}
              </th>
              {r.events.map((n, i) => (
                <td key={profiles[i]!.arm} class="num">
                  {countText(n)}
                </td>
              ))}
            </tr>
          ))}
          <tr>
            <th scope="row">events</th>
            {profiles.map((p) => (
              <td key={p.arm} class="num">
                {countText(p.total)}
              </td>
            ))}
          </tr>
          <tr>
            <th scope="row">lost (buffer full)</th>
            {profiles.map((p) => (
              <td key={p.arm} class="num">
                {countText(p.lost)}
              </td>
            ))}
          </tr>
          <tr>
            <th scope="row">iterations</th>
            {profiles.map((p) => (
              <td key={p.arm} class="num">
                {p.iterations}
              </td>
            ))}
          </tr>
        </tbody>
      </table>
      {notes.length > 0 && (
        <ul class="notes" data-testid="flush-notes">
          {notes.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
