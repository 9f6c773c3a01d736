// Two runs (or arms of two runs) side by side. Within one run the controller compares the
// arms itself (baseline, verdicts); across runs there is no verdict to show, only the values
// next to each other: this merges the runs' reports into one whose "arms" are run:arm, with
// no % differences, for the same table and charts.
import type { Report, Report_Group, Report_Stat } from "../api/gen/tlbfleet/v1/common";

export interface ReportPart {
  /** Column title, e.g. "12:mmap". */
  label: string;
  report: Report;
  /** The arm of the report to take; "" = every arm. */
  arm: string;
}

export function sideBySide(parts: readonly ReportPart[]): Report {
  const columns: { part: number; arm: number; label: string }[] = [];
  parts.forEach((p, i) => {
    p.report.arms.forEach((arm, a) => {
      if (p.arm && arm !== p.arm) return;
      columns.push({ part: i, arm: a, label: p.arm ? p.label : `${p.label}:${arm}` });
    });
  });
  const keys: string[] = [];
  const groups = new Map<string, Report_Group>();
  parts.forEach((p, i) => {
    for (const g of p.report.groups) {
      const key = `${g.metric}\u0000${g.paramName}\u0000${g.paramValue}`;
      if (!groups.has(key)) {
        keys.push(key);
        groups.set(key, {
          metric: g.metric,
          unit: g.unit,
          better: g.better,
          paramName: g.paramName,
          paramValue: g.paramValue,
          n: columns.map(() => 0),
          stats: [],
          verdicts: [], // across runs there is no calibrated verdict (see above)
          boots: columns.map(() => 0),
          variance: [],
          records: [],
        });
      }
      const merged = groups.get(key)!;
      columns.forEach((c, col) => {
        if (c.part !== i) return;
        merged.n[col] = g.n[c.arm] ?? 0;
        merged.boots[col] = g.boots[c.arm] ?? 0;
        const variance = g.variance[c.arm];
        if (variance) {
          // Each arm's split is its own, so it carries over across runs unchanged.
          while (merged.variance.length < columns.length) {
            merged.variance.push({ boots: 0, iterations: 0, whyUndefined: "not in that report" });
          }
          merged.variance[col] = variance;
        }
        for (const s of g.stats) {
          let stat: Report_Stat | undefined = merged.stats.find((x) => x.name === s.name);
          if (!stat) {
            stat = {
              name: s.name,
              values: columns.map(() => 0),
              pctDiff: [],
              defined: columns.map(() => false),
              spread: s.spread,
              headline: s.headline,
            };
            merged.stats.push(stat);
          }
          stat.values[col] = s.values[c.arm] ?? 0;
          stat.defined[col] = s.defined[c.arm] ?? s.values[c.arm] !== undefined;
        }
      });
    }
  });
  return {
    runId: parts.map((p) => p.report.runId).join(" vs "),
    title: parts.map((p) => p.label).join(" vs "),
    arms: columns.map((c) => c.label),
    groups: keys.map((k) => groups.get(k)!),
    level: 0,
    margin: 0,
    adjusted: false,
    // Each run's hosts and left-out samples are its own report's: the page shows them per run.
    hosts: [],
    excluded: [],
    rows: 0,
    ceilings: "",
    scope: "across runs",
    flushProfiles: [],
    ceilingRecommendations: [],
    ceilingRecommendationsUnavailable: "",
  };
}
