// The Fleet page's rows: each host's facts, its ceiling (value, or why it is locked), its
// state, and the label/microarch filter.
import type { Host } from "../api/gen/tlbfleet/v1/fleet";
import { waitedOn, type WaitedOn } from "./lost-hosts";
import { parseLabels } from "./runform";

export interface HostFilter {
  /** "k=v, k=v": every label must match ("k" alone: the label exists). */
  label: string;
  /** case-insensitive, exact */
  microarch: string;
}

export function hostFilterFromQuery(q: URLSearchParams): HostFilter {
  return { label: q.get("label") ?? "", microarch: q.get("microarch") ?? "" };
}

export function queryFromHostFilter(f: HostFilter): URLSearchParams {
  const q = new URLSearchParams();
  if (f.label) q.set("label", f.label);
  if (f.microarch) q.set("microarch", f.microarch);
  return q;
}

export function matchesHost(host: Host, f: HostFilter): boolean {
  const labels = host.info?.labels ?? {};
  for (const [k, v] of Object.entries(parseLabels(f.label))) {
    if (!(k in labels)) return false;
    if (v !== "" && labels[k] !== v) return false;
  }
  if (f.microarch) {
    const m = host.info?.cpu?.microarch ?? "";
    if (m.toLowerCase() !== f.microarch.trim().toLowerCase()) return false;
  }
  return true;
}

/** "33 pages", or the reason it is locked ("locked: kernel lockdown (integrity)"). */
export function ceilingText(host: Host): { text: string; writable: boolean } {
  const c = host.info?.ceiling;
  if (!c) return { text: "unknown", writable: false };
  const value = c.hasValue ? `${c.value} pages` : "";
  if (c.writable) return { text: value || "writable", writable: true };
  const reason =
    c.reason || (c.lockdown && c.lockdown !== "none" ? `lockdown (${c.lockdown})` : "not writable");
  return { text: value ? `${value}, locked: ${reason}` : `locked: ${reason}`, writable: false };
}

export type HostState = "idle" | "running" | "rebooting" | "silent" | "lost";

export interface HostStateView {
  state: HostState;
  detail: string;
  /** The run the state is about (the job's, or the one that asked for the reboot). */
  runId: string;
  /** Silent: the runs with a slot on it that wait for it, and since when. */
  waitedOn?: WaitedOn;
}

/**
 * What the host does now. Rebooting wins over the rest: a host asked for a fresh boot is
 * expected to go away (and may still be connected on its old boot for a moment); a host
 * that is away without having been asked is lost, whatever lease the store still holds for
 * it (the lease expires and its job is queued again). A host that runs wait for is silent,
 * whether its stream is still open (a hung machine) or not: those runs cannot go on without it.
 */
export function hostState(host: Host): HostStateView {
  if (host.rebooting) {
    return {
      state: "rebooting",
      detail: host.rebootingForRun ? `for run ${host.rebootingForRun}` : "",
      runId: host.rebootingForRun,
    };
  }
  const waited = waitedOn(host);
  if (waited) return { state: "silent", detail: "", runId: "", waitedOn: waited };
  if (!host.connected) return { state: "lost", detail: "not connected", runId: "" };
  if (host.currentRunId) {
    const what = [host.currentBenchmark, host.currentArm && `arm ${host.currentArm}`]
      .filter(Boolean)
      .join(", ");
    const iteration = host.currentIteration ? ` iteration ${host.currentIteration}` : "";
    return {
      state: "running",
      detail: `run ${host.currentRunId} job ${host.currentJobId}${what ? ` (${what}${iteration})` : ""}`,
      runId: host.currentRunId,
    };
  }
  if (host.currentLease) {
    return { state: "running", detail: `lease ${host.currentLease}`, runId: "" };
  }
  return { state: "idle", detail: "", runId: "" };
}

/** Time since the host's boot began ("3 d 4 h", "12 min"); a dash when unknown. */
export function uptimeText(host: Host, nowMs: number): string {
  const boot = Number(host.info?.bootTimeUnix ?? 0);
  if (!boot) return "—";
  const s = Math.max(0, Math.floor(nowMs / 1000 - boot));
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return `${h} h ${m} min`;
  if (m > 0) return `${m} min`;
  return `${s} s`;
}

export function microarchs(hosts: readonly Host[]): string[] {
  const set = new Set<string>();
  for (const h of hosts) if (h.info?.cpu?.microarch) set.add(h.info.cpu.microarch);
  return [...set].sort();
}
