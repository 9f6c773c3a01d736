// The Fleet page's rows: each host's facts, its ceiling (value, or why it is locked), its
// state, and the label/microarch filter.
import type { Host } from "../api/gen/tlbfleet/v1/fleet";
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

export type HostState = "idle" | "running" | "lost";

export function hostState(host: Host): { state: HostState; detail: string } {
  if (!host.connected) return { state: "lost", detail: "not connected" };
  if (host.currentLease) return { state: "running", detail: `lease ${host.currentLease}` };
  return { state: "idle", detail: "" };
}

export function microarchs(hosts: readonly Host[]): string[] {
  const set = new Set<string>();
  for (const h of hosts) if (h.info?.cpu?.microarch) set.add(h.info.cpu.microarch);
  return [...set].sort();
}
