// Compare: two runs, or arms of runs, side by side with the same table and charts. Two arms
// of one run get the controller's comparison (with verdicts); arms of different runs are
// shown next to each other without a verdict. The choice is in the URL (?a=RUN[:arm]&b=...).
// Under the table: the hosts each arm was measured on and the samples left out, as each run's
// report gives them.
import { useMemo, useState } from "preact/hooks";
import { api } from "../api";
import type { Report } from "../api/gen/tlbfleet/v1/common";
import { ArmHostsView } from "../components/ArmHosts";
import { MetricChartView } from "../components/Chart";
import { ComparisonBlock } from "../components/ComparisonTable";
import { ErrorView, Loading, Section } from "../components/common";
import { setQuery, useResource, useTitle, type Location } from "../hooks";
import { chartsFromReport } from "../lib/chart-data";
import { sideBySide } from "../lib/compare";
import { buildBlocks } from "../lib/table";
import { formatCompareRef, parseCompareRef, type CompareRef } from "../lib/url-state";

function onlyArms(report: Report, arms: string[]): Report {
  const idx = arms.map((a) => report.arms.indexOf(a)).filter((i) => i >= 0);
  return {
    ...report,
    arms: idx.map((i) => report.arms[i]!),
    hosts: report.hosts.filter((h) => arms.includes(h.arm)),
    groups: report.groups.map((g) => ({
      ...g,
      n: idx.map((i) => g.n[i] ?? 0),
      boots: idx.map((i) => g.boots[i] ?? 0),
      verdicts: g.verdicts.filter((v) => arms.includes(v.arm)),
      stats: g.stats.map((s) => ({
        ...s,
        values: idx.map((i) => s.values[i] ?? 0),
        pctDiff: idx.map((i) => s.pctDiff[i] ?? 0),
        defined: idx.map((i) => s.defined[i] ?? false),
      })),
    })),
  };
}

interface HostsPart {
  label: string;
  hosts: Report["hosts"];
  excluded: Report["excluded"];
}

/** Whether the reports say anything about hosts (a controller before issue 26 does not). */
function hostsKnown(m: { report: Report; verdicts: boolean; parts: HostsPart[] }): boolean {
  if (m.verdicts) return m.report.hosts.length > 0 || m.report.excluded.length > 0;
  return m.parts.some((p) => p.hosts.length > 0 || p.excluded.length > 0);
}

export function ComparePage({ location }: { location: Location }) {
  useTitle("Compare");
  const a = parseCompareRef(location.query.get("a"));
  const b = parseCompareRef(location.query.get("b"));
  const [textA, setTextA] = useState(a ? formatCompareRef(a) : "");
  const [textB, setTextB] = useState(b ? formatCompareRef(b) : "");
  const sameRun = a && b && a.runId === b.runId;

  const reportA = useResource(
    `cmp/${a?.runId}/${sameRun ? a?.arm : a?.arm}`,
    (s) => api.compare(a!.runId, a!.arm, s),
    {
      enabled: !!a,
    },
  );
  const reportB = useResource(
    `cmp/${b?.runId}/${b?.arm}`,
    (s) => api.compare(b!.runId, b!.arm, s),
    {
      enabled: !!b && !sameRun,
    },
  );

  const merged = useMemo(() => {
    if (!a || !b || !reportA.data?.report) return undefined;
    if (sameRun) {
      const r = reportA.data.report;
      const arms = [a.arm || r.arms[0]!, b.arm || r.arms[1] || ""].filter((x) => x);
      return { report: onlyArms(r, arms), verdicts: true, parts: [] as HostsPart[] };
    }
    if (!reportB.data?.report) return undefined;
    // Each run's hosts and left-out samples, under its own label (the arm it gives, if any).
    const parts = [
      { ref: a, report: reportA.data.report },
      { ref: b, report: reportB.data.report },
    ].map(({ ref, report }) => ({
      label: formatCompareRef(ref),
      hosts: report.hosts.filter((h) => !ref.arm || h.arm === ref.arm),
      excluded: report.excluded,
    }));
    return {
      parts,
      report: sideBySide([
        { label: formatCompareRef(a), report: reportA.data.report, arm: a.arm },
        { label: formatCompareRef(b), report: reportB.data.report, arm: b.arm },
      ]),
      verdicts: false,
    };
  }, [a?.runId, a?.arm, b?.runId, b?.arm, reportA.data, reportB.data]);

  const blocks = useMemo(() => (merged ? buildBlocks(merged.report) : []), [merged]);
  const charts = useMemo(() => (merged ? chartsFromReport(merged.report) : []), [merged]);

  const apply = (e: Event) => {
    e.preventDefault();
    const q = new URLSearchParams();
    const ra = parseCompareRef(textA.trim());
    const rb = parseCompareRef(textB.trim());
    if (ra) q.set("a", formatCompareRef(ra));
    if (rb) q.set("b", formatCompareRef(rb));
    setQuery(q, { push: true });
  };
  const refInput = (id: string, label: string, value: string, set: (v: string) => void) => (
    <label for={id}>
      {label}
      <input
        id={id}
        value={value}
        placeholder="RUN or RUN:arm"
        onInput={(e) => set(e.currentTarget.value)}
      />
    </label>
  );
  const show = (ref: CompareRef | undefined) => (ref ? formatCompareRef(ref) : "");

  return (
    <>
      <h1>Compare</h1>
      <form class="filters" onSubmit={apply} aria-label="What to compare">
        {refInput("cmp-a", "First (baseline)", textA, setTextA)}
        {refInput("cmp-b", "Second", textB, setTextB)}
        <button type="submit">Compare</button>
      </form>
      {(!a || !b) && (
        <p class="muted">Give two runs, or two arms as RUN:arm (of one run or of two).</p>
      )}
      {reportA.error && <ErrorView error={reportA.error} what={`Run ${a?.runId}`} />}
      {reportB.error && <ErrorView error={reportB.error} what={`Run ${b?.runId}`} />}
      {a && b && !merged && !reportA.error && !reportB.error && <Loading what="the reports" />}
      {merged && (
        <>
          {!merged.verdicts && (
            <p class="notice">
              {show(a)} and {show(b)} are different runs: their values are shown side by side,
              without a verdict. For a verdict, measure both arms in one run (the controller
              compares arms within a run, interleaved on the same hosts and boots).
            </p>
          )}
          <Section title="Table" id="cmp-table">
            {blocks.map((block) => (
              <ComparisonBlock
                key={block.metric}
                block={merged.verdicts ? block : { ...block, verdicts: [] }}
              />
            ))}
          </Section>
          {hostsKnown(merged) && (
            <Section title="Hosts" id="cmp-hosts">
              {merged.verdicts ? (
                <ArmHostsView hosts={merged.report.hosts} excluded={merged.report.excluded} />
              ) : (
                merged.parts.map((p, i) => (
                  <ArmHostsView
                    key={p.label}
                    hosts={p.hosts}
                    excluded={p.excluded}
                    title={`Hosts of ${p.label}`}
                    testId={`arm-hosts-${i}`}
                  />
                ))
              )}
            </Section>
          )}
          <Section title="Charts" id="cmp-charts">
            <div class="charts">
              {charts.map((c) => (
                <MetricChartView key={c.metric} chart={c} />
              ))}
            </div>
          </Section>
        </>
      )}
    </>
  );
}
