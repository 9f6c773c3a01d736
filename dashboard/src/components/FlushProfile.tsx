// The TLB flush profile per arm: a histogram of tlb:tlb_flush events by size (share of the
// arm's events per page bucket, "full flush" first) and a table of events by reason. Side by
// side, on the same axes, it shows whether the arms really flushed differently.
import { useEffect, useRef } from "preact/hooks";
import uPlot, { type Options } from "uplot";
import {
  bucketLabel,
  bucketPercents,
  flushReasonName,
  seenBuckets,
  seenReasons,
  type ArmFlushProfile,
} from "../lib/flush";
import { armColour } from "./Chart";

function Histogram({
  profile,
  buckets,
  colour,
  yMax,
}: {
  profile: ArmFlushProfile;
  buckets: string[];
  colour: string;
  yMax: number;
}) {
  const ref = useRef<HTMLDivElement>(null);
  const percents = bucketPercents(profile, buckets);
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
        {profile.arm}: {profile.total.toLocaleString("en")} flushes in {profile.iterations}{" "}
        iterations
        {profile.lost > 0 ? `, ${profile.lost.toLocaleString("en")} lost` : ""}
      </figcaption>
      <div ref={ref} role="img" aria-label={`${profile.arm} flush sizes: ${description}`} />
    </figure>
  );
}

export function FlushProfileView({ profiles }: { profiles: ArmFlushProfile[] }) {
  if (profiles.length === 0) {
    return (
      <p class="muted" data-testid="flush-none">
        No flush profile in this run (add <code>monitors: [flush_profile]</code> to the run spec).
      </p>
    );
  }
  const buckets = seenBuckets(profiles);
  const reasons = seenReasons(profiles);
  const yMax = Math.min(
    100,
    Math.max(10, ...profiles.flatMap((p) => bucketPercents(p, buckets))) * 1.1,
  );
  return (
    <div data-testid="flush-profile">
      <div class="charts">
        {profiles.map((p, i) => (
          <Histogram key={p.arm} profile={p} buckets={buckets} colour={armColour(i)} yMax={yMax} />
        ))}
      </div>
      <table class="data">
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
          {reasons.map((code) => (
            <tr key={code}>
              <th scope="row">
                {code} {flushReasonName(code)}
              </th>
              {profiles.map((p) => (
                <td key={p.arm} class="num">
                  {(p.reasons.get(code) ?? 0).toLocaleString("en")}
                </td>
              ))}
            </tr>
          ))}
          <tr>
            <th scope="row">lost (buffer full)</th>
            {profiles.map((p) => (
              <td key={p.arm} class="num">
                {p.lost.toLocaleString("en")}
              </td>
            ))}
          </tr>
        </tbody>
      </table>
    </div>
  );
}
