// Compare: two arms of one run, or two runs (or arms of two runs), with the same table, verdicts
// and charts as the Run page. Every comparison is the controller's one report: two arms of a
// run are that run's report with the first as baseline; arms of different runs are the
// controller's comparison across runs (CompareRequest.with_run_id, arm, with_arm), whose arms
// are RUN:ARM and whose verdicts say they speak across runs. The choice is in the URL
// (?a=RUN[:arm]&b=RUN[:arm]). Under the table: the hosts each arm was measured on and the
// samples left out, and the arms' flush profiles, as the report gives them.
import { useMemo, useState } from "preact/hooks";
import { ApiError, fieldOf } from "../api/errors";
import { api } from "../api";
import type { Report } from "../api/gen/tlbfleet/v1/common";
import { ArmHostsView } from "../components/ArmHosts";
import { MetricChartView } from "../components/Chart";
import { ComparisonBlock } from "../components/ComparisonTable";
import { ErrorView, FieldError, Loading, Section } from "../components/common";
import { FlushProfileView } from "../components/FlushProfile";
import { setQuery, useResource, useTitle, type Location } from "../hooks";
import { chartsFromReport } from "../lib/chart-data";
import { buildBlocks } from "../lib/table";
import { formatCompareRef, parseCompareRef, type CompareRef } from "../lib/url-state";

/**
 * The report's columns for `arms` only, in that order (two arms of a run with more): every
 * figure is the report's own, including q adjusted over all of the run's rows.
 */
export function onlyArms(report: Report, arms: readonly string[]): Report {
  const idx = arms.map((a) => report.arms.indexOf(a)).filter((i) => i >= 0);
  const kept = idx.map((i) => report.arms[i]!);
  const pick = <T,>(xs: readonly T[]): T[] => idx.filter((i) => i < xs.length).map((i) => xs[i]!);
  return {
    ...report,
    arms: kept,
    hosts: report.hosts.filter((h) => kept.includes(h.arm)),
    flushProfiles: kept.flatMap((arm) => report.flushProfiles.filter((p) => p.arm === arm)),
    groups: report.groups.map((g) => ({
      ...g,
      n: pick(g.n),
      boots: pick(g.boots),
      variance: pick(g.variance),
      records: pick(g.records),
      verdicts: g.verdicts.filter((v) => kept.includes(v.arm)),
      stats: g.stats.map((s) => ({
        ...s,
        values: pick(s.values),
        pctDiff: pick(s.pctDiff),
        defined: pick(s.defined),
      })),
    })),
  };
}

/** Which of the two inputs a refusal of the server is about (its `field`). */
function inputOf(error: Error | undefined): "a" | "b" | undefined {
  if (!(error instanceof ApiError)) return undefined;
  const field = fieldOf(error);
  if (field === "arm" || field === "baseline" || field === "run_id") return "a";
  if (field === "with_arm" || field === "with_run_id") return "b";
  return undefined;
}

export function ComparePage({ location }: { location: Location }) {
  useTitle("Compare");
  const a = parseCompareRef(location.query.get("a"));
  const b = parseCompareRef(location.query.get("b"));
  const [textA, setTextA] = useState(a ? formatCompareRef(a) : "");
  const [textB, setTextB] = useState(b ? formatCompareRef(b) : "");
  const sameRun = !!a && !!b && a.runId === b.runId;

  // One request either way: the run's report with the first arm as baseline, or the report
  // across runs of a's arm(s) against b's.
  const compare = useResource(
    `cmp/${a ? formatCompareRef(a) : ""}/${b ? formatCompareRef(b) : ""}`,
    (s) =>
      sameRun
        ? api.compare(a!.runId, { baseline: a!.arm }, s)
        : api.compare(a!.runId, { withRunId: b!.runId, arm: a!.arm, withArm: b!.arm }, s),
    { enabled: !!a && !!b },
  );

  const shown = useMemo((): { report: Report; missing: string } | undefined => {
    const r = compare.data?.report;
    if (!a || !b || !r) return undefined;
    if (!sameRun) return { report: r, missing: "" };
    const arms = [a.arm || r.arms[0] || "", b.arm || r.arms[1] || ""].filter((x) => x);
    const missing = arms.filter((x) => !r.arms.includes(x));
    return {
      report: onlyArms(r, arms),
      missing: missing.length
        ? `run ${a.runId} has no arm named "${missing[0]}" (arms: ${r.arms.join(", ")})`
        : "",
    };
  }, [a?.runId, a?.arm, b?.runId, b?.arm, compare.data]);

  const report = shown?.report;
  const blocks = useMemo(() => (report ? buildBlocks(report) : []), [report]);
  const charts = useMemo(() => (report ? chartsFromReport(report) : []), [report]);
  const errorAt = inputOf(compare.error);

  const apply = (e: Event) => {
    e.preventDefault();
    const q = new URLSearchParams();
    const ra = parseCompareRef(textA.trim());
    const rb = parseCompareRef(textB.trim());
    if (ra) q.set("a", formatCompareRef(ra));
    if (rb) q.set("b", formatCompareRef(rb));
    setQuery(q, { push: true });
  };
  const refInput = (
    id: string,
    label: string,
    value: string,
    set: (v: string) => void,
    error: string | undefined,
  ) => (
    <label for={id}>
      {label}
      <input
        id={id}
        value={value}
        placeholder="RUN or RUN:arm"
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
        onInput={(e) => set(e.currentTarget.value)}
      />
      <FieldError id={`${id}-error`} message={error} />
    </label>
  );
  const show = (ref: CompareRef | undefined) => (ref ? formatCompareRef(ref) : "");
  const errorText = compare.error?.message;

  return (
    <>
      <h1>Compare</h1>
      <form class="filters" onSubmit={apply} aria-label="What to compare">
        {refInput(
          "cmp-a",
          "First (baseline)",
          textA,
          setTextA,
          errorAt === "a" ? errorText : undefined,
        )}
        {refInput(
          "cmp-b",
          "Second",
          textB,
          setTextB,
          errorAt === "b" ? errorText : shown?.missing || undefined,
        )}
        <button type="submit">Compare</button>
      </form>
      {(!a || !b) && (
        <p class="muted">Give two runs, or two arms as RUN:arm (of one run or of two).</p>
      )}
      {compare.error && !errorAt && (
        <ErrorView error={compare.error} what={sameRun ? `Run ${a?.runId}` : "The comparison"} />
      )}
      {a && b && !report && !compare.error && <Loading what="the comparison" />}
      {report && (
        <>
          {report.scope && (
            <p class="notice" data-testid="report-scope">
              Scope: <strong>{report.scope}</strong>. {show(a)} and {show(b)} are different runs:
              the verdicts below are the controller's comparison across them, and their notes say
              what that covers.
            </p>
          )}
          {report.title && <p class="muted">{report.title}</p>}
          {report.ceilings && <p class="muted">{report.ceilings}</p>}
          <Section title="Table" id="cmp-table">
            {blocks.map((block) => (
              <ComparisonBlock key={block.metric} block={block} />
            ))}
          </Section>
          {(report.hosts.length > 0 || report.excluded.length > 0) && (
            <Section title="Hosts" id="cmp-hosts">
              <ArmHostsView hosts={report.hosts} excluded={report.excluded} />
            </Section>
          )}
          <Section title="Charts" id="cmp-charts">
            <div class="charts">
              {charts.map((c) => (
                <MetricChartView key={c.metric} chart={c} />
              ))}
            </div>
          </Section>
          {report.flushProfiles.length > 0 && (
            <Section title="TLB flush profile" id="cmp-flush">
              <FlushProfileView profiles={report.flushProfiles} />
            </Section>
          )}
        </>
      )}
    </>
  );
}
