// A run's comparison (tlbfleet.v1.Report from GET /api/v1/runs/{id}/compare) as the
// dashboard shows it: mmtests compare-kernels blocks (one per metric: a row per statistic and
// sweep value, a column per arm, "value (±pct%)" with positive = better) and a verdict per
// (sweep value, arm) with its interval, p, q, scope and test design (Report.Group.verdicts).
// No statistic is computed here: every number comes from the controller's one comparison
// function.
import {
  Better,
  type Report,
  type Report_Group,
  type Report_Stat,
  type Report_Variance,
} from "../api/gen/tlbfleet/v1/common";
import { formatP, formatPct, formatValue, sweepLabel } from "./format";

export type VerdictKind = "baseline" | "better" | "worse" | "same" | "unknown";

/** The verdict of one arm against the baseline in one row, as the report gives it. */
export interface VerdictInfo {
  kind: VerdictKind;
  /** arm / baseline of the row's estimand, with its interval. */
  ratio?: number;
  low?: number;
  high?: number;
  /** Confidence level of the interval, e.g. 0.95. */
  level?: number;
  p?: number;
  /** Benjamini–Hochberg adjusted p across the comparison's rows. */
  q?: number;
  /** "within-boot" (one boot per arm: speaks for that boot only) or "across-boots". */
  scope?: string;
  /** The report's scope: "across runs" when the arms come from different runs (Report.scope). */
  reportScope?: string;
  /** Boots per arm behind it. */
  boots?: number;
  /** How the test paired the arms: "paired-boots", "unpaired-iterations", ... */
  design?: string;
  notes?: string[];
}

export interface Cell {
  value: string;
  pct: string;
  /** For colour: is the difference in the better or the worse direction. */
  tone: "better" | "worse" | "none";
  defined: boolean;
  /** The headline row's cell of an arm whose verdict test is significant (`*` in the text). */
  significant: boolean;
}

export interface StatRow {
  stat: string;
  sweep: string;
  /** Hmean or Amean: the row the verdicts' significance marks (Report.Stat.headline). */
  headline: boolean;
  /** Stddev or CoeffVar: its % reads lower-is-better (Report.Stat.spread). */
  spread: boolean;
  cells: Cell[];
}

export interface VerdictRow {
  sweep: string;
  arm: string;
  verdict?: VerdictInfo;
}

/** One arm's variance split in one row (Report.Group.variance), as the table prints it. */
export interface VarianceCell {
  arm: string;
  boots: number;
  /** Harmonic mean of iterations per boot. */
  iterations: string;
  /** Standard deviations in the metric's unit: sqrt of the variance components. */
  sdWithin: string;
  sdBetween: string;
  /** Share of the variance that is between boots, "73%"; a dash when not estimable. */
  betweenShare: string;
  /** Why a component could not be estimated (one boot, one iteration per boot). */
  why: string;
}

export interface VarianceRow {
  sweep: string;
  arms: VarianceCell[];
}

export interface MetricBlock {
  metric: string;
  unit: string;
  better: Better;
  title: string;
  arms: string[];
  /** Samples per arm, per sweep value (the "n" of each row). */
  n: { sweep: string; n: number[] }[];
  rows: StatRow[];
  verdicts: VerdictRow[];
  /** Per sweep value, each arm's variance between and within boots; empty for old reports. */
  variance: VarianceRow[];
}

export function metricTitle(metric: string, unit: string, better: Better): string {
  const dir = better === Better.BETTER_LOWER ? "lower is better" : "higher is better";
  return unit ? `${metric} (${unit}, ${dir})` : `${metric} (${dir})`;
}

// As the text report (controller/report/render.cc): a % against the baseline only where both
// values are defined and a zero baseline meets a zero value; a spread's % reads lower-is-better
// whatever the metric, so it gets no better/worse colour; the headline row marks an arm whose
// verdict test is significant.
function cell(group: Report_Group, stat: Report_Stat, arm: number): Cell {
  const defined = stat.defined[arm] ?? stat.values[arm] !== undefined;
  const value = stat.values[arm];
  const baseDefined = stat.defined[0] ?? stat.values[0] !== undefined;
  const pctDefined =
    arm > 0 && defined && baseDefined && (stat.values[0] !== 0 || stat.values[arm] === 0);
  const pct = pctDefined ? stat.pctDiff[arm] : undefined;
  return {
    value: defined ? formatValue(value) : "—",
    pct: pct === undefined ? "" : formatPct(pct),
    tone:
      stat.spread || pct === undefined || Math.abs(pct) < 0.005
        ? "none"
        : pct > 0
          ? "better"
          : "worse",
    defined,
    significant: stat.headline && pct !== undefined && (group.records[arm]?.significant ?? false),
  };
}

const KINDS: readonly VerdictKind[] = ["baseline", "better", "worse", "same", "unknown"];

/** The report's own verdict of (group, arm index): Report.Group.verdicts, by arm name. */
export function reportVerdictOf(
  report: Report,
): (group: Report_Group, arm: number) => VerdictInfo | undefined {
  return (group, arm) => {
    const name = report.arms[arm];
    const v = group.verdicts.find((x) => x.arm === name);
    if (!v) return undefined;
    return {
      kind: (KINDS as readonly string[]).includes(v.verdict)
        ? (v.verdict as VerdictKind)
        : "unknown",
      ratio: v.ratio,
      low: v.ciLow,
      high: v.ciHigh,
      level: report.level || undefined,
      p: v.p,
      q: v.q,
      scope: v.scope || undefined,
      reportScope: report.scope || undefined,
      boots: group.boots[arm] || undefined,
      design: v.design || undefined,
      notes: v.notes,
    };
  };
}

/**
 * Groups the report's rows by metric, in the report's order. `verdictOf` gives the verdict
 * of (group, arm index); by default the report's own.
 */
export function buildBlocks(
  report: Report,
  verdictOf: (group: Report_Group, arm: number) => VerdictInfo | undefined = reportVerdictOf(
    report,
  ),
): MetricBlock[] {
  const blocks: MetricBlock[] = [];
  for (const group of report.groups) {
    let block = blocks.find((b) => b.metric === group.metric);
    if (!block) {
      block = {
        metric: group.metric,
        unit: group.unit,
        better: group.better,
        title: metricTitle(group.metric, group.unit, group.better),
        arms: report.arms,
        n: [],
        rows: [],
        verdicts: [],
        variance: [],
      };
      blocks.push(block);
    }
    const sweep = sweepLabel(group.paramName, group.paramValue);
    block.n.push({ sweep, n: group.n });
    for (const stat of group.stats) {
      block.rows.push({
        stat: stat.name,
        sweep,
        headline: stat.headline,
        spread: stat.spread,
        cells: report.arms.map((_, arm) => cell(group, stat, arm)),
      });
    }
    report.arms.forEach((arm, i) => {
      if (i === 0) return;
      block.verdicts.push({ sweep, arm, verdict: verdictOf(group, i) });
    });
    if (group.variance.length > 0) {
      block.variance.push({
        sweep,
        arms: report.arms.map((arm, i) => varianceCell(arm, group.variance[i])),
      });
    }
  }
  return blocks;
}

function sd(variance: number | undefined): string {
  return variance === undefined || variance < 0 ? "—" : formatValue(Math.sqrt(variance));
}

export function varianceCell(arm: string, v: Report_Variance | undefined): VarianceCell {
  if (!v) {
    return {
      arm,
      boots: 0,
      iterations: "—",
      sdWithin: "—",
      sdBetween: "—",
      betweenShare: "—",
      why: "not in this report",
    };
  }
  return {
    arm,
    boots: v.boots,
    iterations: v.iterations > 0 ? String(Math.round(v.iterations * 10) / 10) : "—",
    sdWithin: sd(v.within),
    sdBetween: sd(v.between),
    betweenShare:
      v.betweenShare === undefined ? "—" : `${Math.round(v.betweenShare * 100).toString()}%`,
    why: v.whyUndefined,
  };
}

/** A ratio as a signed % change where positive = better (mmtests' sign convention). */
export function ratioAsBetterPct(ratio: number, better: Better): number {
  return better === Better.BETTER_LOWER ? (1 - ratio) * 100 : (ratio - 1) * 100;
}

export interface VerdictText {
  label: string;
  /** "+3.21% [+1.10%, +5.40%] (95%)": the change with its interval, positive = better. */
  interval: string;
  p: string;
  q: string;
  scope: string;
  /** One sentence for a tooltip or a screen reader. */
  sentence: string;
}

export function scopeText(scope: string | undefined, boots?: number): string {
  if (!scope) return "—";
  if (scope === "within-boot") return "within one boot";
  if (scope === "across-boots") return boots ? `across ${boots} boots` : "across boots";
  return scope;
}

export function formatVerdict(v: VerdictInfo | undefined, better: Better): VerdictText {
  if (!v) {
    return {
      label: "—",
      interval: "—",
      p: "—",
      q: "—",
      scope: "—",
      sentence: "no verdict in this report",
    };
  }
  let interval = "—";
  if (v.ratio !== undefined) {
    const mid = formatPct(ratioAsBetterPct(v.ratio, better));
    if (v.low !== undefined && v.high !== undefined) {
      // For lower-is-better the ratio's upper bound is the change's lower bound.
      const a = ratioAsBetterPct(v.low, better);
      const b = ratioAsBetterPct(v.high, better);
      const level = v.level ? ` (${Math.round(v.level * 100)}%)` : "";
      interval = `${mid} [${formatPct(Math.min(a, b))}, ${formatPct(Math.max(a, b))}]${level}`;
    } else interval = mid;
  }
  const scope =
    [v.reportScope, scopeText(v.scope, v.boots), v.design ? v.design.replace("-", " ") : undefined]
      .filter((x) => x && x !== "—")
      .join(", ") || "—";
  const sentence =
    v.kind === "unknown"
      ? `can't tell yet (${interval}, ${scope})`
      : `${v.kind} (${interval}, p ${formatP(v.p)}, q ${formatP(v.q)}, ${scope})`;
  return {
    label: v.kind === "unknown" ? "can't tell" : v.kind,
    interval,
    p: formatP(v.p),
    q: formatP(v.q),
    scope,
    sentence,
  };
}
