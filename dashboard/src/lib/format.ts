// Numbers, times and states as the tables show them.
import { Better } from "../api/gen/tlbfleet/v1/common";
import { JobState, RunState } from "../api/gen/tlbfleet/v1/fleet";

/** A measured value: 2 decimals from 1 up (as mmtests prints), 4 significant digits below. */
export function formatValue(value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return "—";
  const abs = Math.abs(value);
  if (abs === 0) return "0.00";
  if (abs >= 1) return value.toFixed(2);
  return value.toPrecision(4);
}

/** A percentage difference, signed: "+3.21%", "-0.50%", "0.00%". */
export function formatPct(pct: number | undefined): string {
  if (pct === undefined || !Number.isFinite(pct)) return "—";
  const text = Math.abs(pct).toFixed(2);
  if (Number(text) === 0) return "0.00%";
  return `${pct > 0 ? "+" : "-"}${text}%`;
}

/** A p- or q-value: 2 significant digits, "<0.001" below that. */
export function formatP(p: number | undefined): string {
  if (p === undefined || !Number.isFinite(p)) return "—";
  if (p < 0.001) return "<0.001";
  return p.toPrecision(2);
}

export function formatUnixTime(seconds: number): string {
  if (!seconds) return "—";
  return new Date(seconds * 1000).toISOString().replace(".000Z", "Z").replace("T", " ");
}

/** "3 s ago", "5 min ago", "2 h ago", "4 d ago" relative to `nowMs`. */
export function formatAgo(seconds: number, nowMs: number): string {
  if (!seconds) return "never";
  const d = Math.max(0, Math.round(nowMs / 1000 - seconds));
  if (d < 60) return `${d} s ago`;
  if (d < 3600) return `${Math.floor(d / 60)} min ago`;
  if (d < 86400) return `${Math.floor(d / 3600)} h ago`;
  return `${Math.floor(d / 86400)} d ago`;
}

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "—";
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m} min ${Math.round(seconds - m * 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

const RUN_STATES: Record<number, string> = {
  [RunState.RUN_STATE_QUEUED]: "queued",
  [RunState.RUN_STATE_RUNNING]: "running",
  [RunState.RUN_STATE_SUCCEEDED]: "succeeded",
  [RunState.RUN_STATE_FAILED]: "failed",
  [RunState.RUN_STATE_CANCELLED]: "cancelled",
};

export function runStateName(state: RunState): string {
  return RUN_STATES[state] ?? "unknown";
}

export function runStateFromName(name: string): RunState | undefined {
  for (const [k, v] of Object.entries(RUN_STATES)) if (v === name) return Number(k) as RunState;
  return undefined;
}

export const RUN_STATE_NAMES = Object.values(RUN_STATES);

const JOB_STATES: Record<number, string> = {
  [JobState.JOB_STATE_QUEUED]: "queued",
  [JobState.JOB_STATE_RUNNING]: "running",
  [JobState.JOB_STATE_SUCCEEDED]: "succeeded",
  [JobState.JOB_STATE_FAILED]: "failed",
  [JobState.JOB_STATE_CANCELLED]: "cancelled",
};

export function jobStateName(state: JobState): string {
  return JOB_STATES[state] ?? "unknown";
}

export function betterName(better: Better): string {
  return better === Better.BETTER_LOWER ? "lower is better" : "higher is better";
}

/** "threads=4", or the bare value when the parameter has no name (report.SweepLabel). */
export function sweepLabel(name: string, value: string): string {
  if (!name) return value;
  return `${name}=${value}`;
}
